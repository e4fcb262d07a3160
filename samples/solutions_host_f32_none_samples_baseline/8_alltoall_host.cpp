// Hand-written sample candidate (not LLM output)
// PKB 8 (all-to-all of equal chunks) on the host backend: every rank publishes its [W, M, N]
// input in a symmetric buffer; rank j copies chunk j of every rank r into its chunk r.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const std::size_t chunk = in.nbytes() / ctx.world_size;
    const pkbw::SymmetricMemory sym = ctx.symmetric("alltoall_host", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    char* out = static_cast<char*>(ctx.output(0).data);
    for (int r = 0; r < ctx.world_size; ++r) {
        std::memcpy(out + r * chunk, static_cast<const char*>(sym.peers[r]) + ctx.rank * chunk, chunk);
    }
    ctx.barrier();
    return 0;
}
