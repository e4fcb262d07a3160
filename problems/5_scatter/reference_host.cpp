// Host oracle for PKB problem 5. Inputs differ in size per rank, so one all-gather per chunk: in
// round k the source contributes chunk k (the others a dummy chunk) and rank k keeps it.
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const int src = static_cast<int>(ctx.param("src", 0));
    const std::size_t chunk = out.nbytes();
    if (ctx.rank == src && in.nbytes() != chunk * static_cast<std::size_t>(ctx.world_size)) {
        return ctx.fail("5_scatter host reference: the source input is not [W, M, N]");
    }
    std::vector<std::byte> dummy(chunk);
    std::vector<std::byte> all(chunk * static_cast<std::size_t>(ctx.world_size));
    for (int k = 0; k < ctx.world_size; ++k) {
        const void* send = ctx.rank == src ? static_cast<const char*>(in.data) + k * chunk
                                           : static_cast<const void*>(dummy.data());
        ctx.all_gather_host(send, chunk, all.data());
        if (k == ctx.rank) {
            std::memcpy(out.data, all.data() + static_cast<std::size_t>(src) * chunk, chunk);
        }
    }
    return 0;
}
