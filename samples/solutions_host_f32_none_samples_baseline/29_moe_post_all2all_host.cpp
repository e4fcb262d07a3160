// Hand-written sample candidate (not LLM output)
// PKB 29 (expert outputs regrouped back to source-rank order, all_to_all_single back, each row
// weighted by its token's routing weight for the row's expert and scatter-added into [M, N]) on the
// host backend, f32: regroup into a symmetric buffer, barrier, pull this rank's rows from every peer,
// weight and add in row order, barrier.
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& rows_in = ctx.input(0);                    // [R, N]
    const float* weights = ctx.input(1).as<const float>();             // [T, k]
    const long long* selected = ctx.input(2).as<const long long>();    // [T, k]
    const long long* counts = ctx.input(3).as<const long long>();      // [W, L]
    const unsigned char* map = ctx.input(4).as<const unsigned char>(); // [E, T] bool
    const long long* perm = ctx.input(5).as<const long long>();        // [R]
    const pkbw::TensorView& out = ctx.output(0);                       // [T, N]
    if (rows_in.dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles float32");
    }
    const int world = ctx.world_size, me = ctx.rank;
    const long long rows = rows_in.shape[0], n = rows_in.shape[1];
    const long long tokens = out.shape[0], topk = ctx.input(1).shape[1], experts = ctx.input(4).shape[0];
    const long long local = experts / world;
    std::vector<double> send(world), recv(world);
    if (ctx.param_list("output_splits", send.data(), world) != world ||
        ctx.param_list("input_splits", recv.data(), world) != world) {
        return ctx.fail("need input_splits and output_splits with one entry per rank");
    }
    // Chunks of the input are (l, w) l-major, sized counts[w, l]; write them in (w, l) order.
    std::vector<long long> start(experts);
    long long at = 0;
    for (long long l = 0; l < local; ++l) {
        for (int w = 0; w < world; ++w) {
            start[l * world + w] = at;
            at += counts[w * local + l];
        }
    }
    if (at != rows) {
        return ctx.fail("the counts do not sum to the expert output rows");
    }
    const std::size_t row_bytes = static_cast<std::size_t>(n) * sizeof(float);
    const pkbw::SymmetricMemory shared =
        ctx.symmetric("moe29_host", static_cast<std::size_t>(rows) * row_bytes);
    char* regrouped = static_cast<char*>(shared.local);
    const char* src = static_cast<const char*>(rows_in.data);
    for (int w = 0; w < world; ++w) {
        for (long long l = 0; l < local; ++l) {
            const std::size_t bytes = static_cast<std::size_t>(counts[w * local + l]) * row_bytes;
            std::memcpy(regrouped, src + start[l * world + w] * row_bytes, bytes);
            regrouped += bytes;
        }
    }
    ctx.barrier();
    long long from = 0;
    for (int p = 0; p < me; ++p) {
        from += static_cast<long long>(send[p]);
    }
    std::vector<float> back;
    for (int p = 0; p < world; ++p) {
        const float* peer = static_cast<const float*>(shared.peers[p]) + from * n;
        back.insert(back.end(), peer, peer + static_cast<long long>(recv[p]) * n);
    }
    ctx.barrier();
    // Weight of returned row i: the routing weight of (token, expert) of the i-th routed map entry.
    std::vector<float> dense(static_cast<std::size_t>(tokens * experts), 0.f);
    for (long long t = 0; t < tokens; ++t) {
        for (long long j = 0; j < topk; ++j) {
            dense[t * experts + selected[t * topk + j]] += weights[t * topk + j];
        }
    }
    std::vector<float> row_weight;
    for (long long e = 0; e < experts; ++e) {
        for (long long t = 0; t < tokens; ++t) {
            if (map[e * tokens + t]) {
                row_weight.push_back(dense[t * experts + e]);
            }
        }
    }
    const long long back_rows = static_cast<long long>(back.size()) / n;
    if (static_cast<long long>(row_weight.size()) != back_rows || ctx.input(5).numel() > back_rows) {
        return ctx.fail("routing_map, the permutation and the returned rows disagree");
    }
    float* o = out.as<float>();
    std::memset(o, 0, out.nbytes());
    for (long long i = 0; i < ctx.input(5).numel(); ++i) {
        for (long long c = 0; c < n; ++c) {
            o[perm[i] * n + c] += back[i * n + c] * row_weight[i];
        }
    }
    return 0;
}
