// Hand-written sample candidate (not LLM output)
// PKB 27 (all_to_all_single of token rows: chunk p of local_tensor, split by input_split_sizes, goes
// to rank p; the output packs what arrives in source-rank order, split by output_split_sizes) on the
// host backend: copy the input into a symmetric buffer, barrier, pull this rank's chunk from every
// peer, barrier. Every rank has the same split lists, as PKB's inputs do.
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const int world = ctx.world_size, me = ctx.rank;
    std::vector<double> send(world), recv(world);
    if (ctx.param_list("input_split_sizes", send.data(), world) != world ||
        ctx.param_list("output_split_sizes", recv.data(), world) != world) {
        return ctx.fail("need input_split_sizes and output_split_sizes with one entry per rank");
    }
    const std::size_t row_bytes = in.nbytes() / static_cast<std::size_t>(in.shape[0]);
    const pkbw::SymmetricMemory shared = ctx.symmetric("moe27_host", in.nbytes());
    std::memcpy(shared.local, in.data, in.nbytes());
    ctx.barrier();
    // Rows of the chunk for rank `me` start at the sum of the splits before it (same on every peer).
    long long from = 0;
    for (int p = 0; p < me; ++p) {
        from += static_cast<long long>(send[p]);
    }
    char* dst = static_cast<char*>(out.data);
    for (int p = 0; p < world; ++p) {
        const std::size_t bytes = static_cast<std::size_t>(recv[p]) * row_bytes;
        std::memcpy(dst, static_cast<const char*>(shared.peers[p]) + from * row_bytes, bytes);
        dst += bytes;
    }
    ctx.barrier();
    return 0;
}
