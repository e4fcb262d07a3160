// Hand-written sample candidate (not LLM output)
// PKB 5 (scatter from param `src`) on the host backend: the source publishes its [W, M, N] tensor
// in a symmetric buffer; after a barrier rank i copies chunk i. Non-source inputs (zeros) are
// ignored.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int src = static_cast<int>(ctx.param("src", 0));
    if (src < 0 || src >= ctx.world_size) {
        return ctx.fail("host scatter sample: param src is outside [0, world_size)");
    }
    // The output is [M, N] on every rank (the input is not), so every rank asks for the same size.
    const std::size_t chunk = ctx.output(0).nbytes();
    const pkbw::SymmetricMemory sym = ctx.symmetric("scatter_host", chunk * ctx.world_size);
    if (ctx.rank == src) {
        std::memcpy(sym.local, ctx.input(0).data, chunk * ctx.world_size);
    }
    ctx.barrier();
    std::memcpy(ctx.output(0).data, static_cast<const char*>(sym.peers[src]) + ctx.rank * chunk, chunk);
    ctx.barrier();
    return 0;
}
