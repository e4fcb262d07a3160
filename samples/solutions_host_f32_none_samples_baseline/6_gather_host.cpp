// Hand-written sample candidate (not LLM output)
// PKB 6 (gather onto param `dst`) on the host backend: every rank publishes its input in a
// symmetric buffer; the destination copies every buffer into its slice of [W, M, N], every other
// rank returns its own input (shape [M, N]).
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const int dst = static_cast<int>(ctx.param("dst", 0));
    if (dst < 0 || dst >= ctx.world_size) {
        return ctx.fail("host gather sample: param dst is outside [0, world_size)");
    }
    const std::size_t bytes = in.nbytes();
    const pkbw::SymmetricMemory sym = ctx.symmetric("gather_host", bytes);
    std::memcpy(sym.local, in.data, bytes);
    ctx.barrier();
    char* out = static_cast<char*>(ctx.output(0).data);
    if (ctx.rank == dst) {
        for (int r = 0; r < ctx.world_size; ++r) {
            std::memcpy(out + r * bytes, sym.peers[r], bytes);
        }
    } else {
        std::memcpy(out, in.data, bytes);
    }
    ctx.barrier();
    return 0;
}
