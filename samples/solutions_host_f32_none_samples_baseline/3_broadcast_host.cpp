// Hand-written sample candidate (not LLM output)
// PKB 3 (broadcast from param `src`) on the host backend: the source publishes its tensor in a
// symmetric buffer (POSIX shared memory); after a barrier every rank copies it to its output.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const int src = static_cast<int>(ctx.param("src", 0));
    if (src < 0 || src >= ctx.world_size) {
        return ctx.fail("host broadcast sample: param src is outside [0, world_size)");
    }
    const std::size_t bytes = in.nbytes();
    const pkbw::SymmetricMemory sym = ctx.symmetric("broadcast_host", bytes);
    if (ctx.rank == src) {
        std::memcpy(sym.local, in.data, bytes);
    }
    ctx.barrier();
    std::memcpy(ctx.output(0).data, sym.peers[src], bytes);
    ctx.barrier(); // the source's next call must not overwrite the buffer while a peer still reads it
    return 0;
}
