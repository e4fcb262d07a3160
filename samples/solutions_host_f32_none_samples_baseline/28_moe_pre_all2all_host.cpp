// Hand-written sample candidate (not LLM output)
// PKB 28 (routing_map = expert_mask.sum(1); tokens permuted expert-major as masked_select; rows
// exchanged with all_to_all_single by input_splits/output_splits; received chunks (source rank w,
// local expert l) regrouped local expert first) on the host backend: permute into a symmetric
// buffer, barrier, pull this rank's chunk from every peer, regroup, barrier.
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& hidden = ctx.input(0);
    const pkbw::TensorView& mask = ctx.input(1);   // [E, k, T] float32
    const pkbw::TensorView& counts = ctx.input(2); // [W, L] int64
    const int world = ctx.world_size, me = ctx.rank;
    const long long experts = mask.shape[0], slots = mask.shape[1], tokens = mask.shape[2];
    const long long local = experts / world;
    std::vector<double> send(world), recv(world);
    if (ctx.param_list("input_splits", send.data(), world) != world ||
        ctx.param_list("output_splits", recv.data(), world) != world) {
        return ctx.fail("need input_splits and output_splits with one entry per rank");
    }
    const float* m = mask.as<const float>();
    float* map = ctx.output(1).as<float>();
    long long* perm = ctx.output(2).as<long long>();
    const long long capacity = ctx.output(2).numel();
    long long rows = 0;
    for (long long e = 0; e < experts; ++e) {
        for (long long t = 0; t < tokens; ++t) {
            float s = 0.f;
            for (long long j = 0; j < slots; ++j) {
                s += m[(e * slots + j) * tokens + t];
            }
            map[e * tokens + t] = s;
            if (s != 0.f) {
                if (rows == capacity) {
                    return ctx.fail("the mask routes more rows than the output holds");
                }
                perm[rows++] = t;
            }
        }
    }
    const std::size_t row_bytes = hidden.nbytes() / static_cast<std::size_t>(hidden.shape[0]);
    const pkbw::SymmetricMemory shared =
        ctx.symmetric("moe28_host", static_cast<std::size_t>(capacity) * row_bytes);
    char* mine = static_cast<char*>(shared.local);
    for (long long i = 0; i < rows; ++i) {
        std::memcpy(mine + i * row_bytes, static_cast<const char*>(hidden.data) + perm[i] * row_bytes,
                    row_bytes);
    }
    ctx.barrier();
    long long from = 0;
    for (int p = 0; p < me; ++p) {
        from += static_cast<long long>(send[p]);
    }
    std::vector<char> received;
    for (int p = 0; p < world; ++p) {
        const char* peer = static_cast<const char*>(shared.peers[p]) + from * row_bytes;
        received.insert(received.end(), peer, peer + static_cast<long long>(recv[p]) * row_bytes);
    }
    // Chunk (w, l) of the received rows has counts[w, l] rows, in w-major order.
    const long long* c = counts.as<const long long>();
    std::vector<long long> start(world * local);
    long long at = 0;
    for (long long i = 0; i < world * local; ++i) {
        start[i] = at;
        at += c[i];
    }
    if (at * static_cast<long long>(row_bytes) != static_cast<long long>(received.size())) {
        return ctx.fail("the counts do not match the received rows");
    }
    char* out = static_cast<char*>(ctx.output(0).data);
    for (long long l = 0; l < local; ++l) {
        for (int w = 0; w < world; ++w) {
            const std::size_t bytes = static_cast<std::size_t>(c[w * local + l]) * row_bytes;
            std::memcpy(out, received.data() + start[w * local + l] * row_bytes, bytes);
            out += bytes;
        }
    }
    ctx.barrier();
    return 0;
}
