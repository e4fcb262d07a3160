// Hand-written sample candidate (not LLM output)
// PKB 2 (all-gather into [W, M, N]) on the host backend: publish the input in a symmetric buffer,
// then copy every peer's buffer into its slice of the output.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const std::size_t bytes = in.nbytes();
    const pkbw::SymmetricMemory sym = ctx.symmetric("allgather_host", bytes);
    std::memcpy(sym.local, in.data, bytes);
    ctx.barrier();
    for (int r = 0; r < ctx.world_size; ++r) {
        std::memcpy(static_cast<char*>(out.data) + r * bytes, sym.peers[r], bytes);
    }
    ctx.barrier();
    return 0;
}
