// Host oracle for PKB problem 35: gather the shapes (to check them, as PKB sizes its receive
// buffers from them), then the shards; rank order is the row order of the dimension-0 concatenation.
#include "pkbw/solution.h"

#include <cstdint>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    std::vector<std::int64_t> shapes(static_cast<std::size_t>(ctx.world_size * x.ndim));
    ctx.all_gather_host(x.shape, static_cast<std::size_t>(x.ndim) * sizeof(std::int64_t), shapes.data());
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        if (shapes[i] != x.shape[i % x.ndim]) {
            return ctx.fail("35 oracle: a peer's shard shape differs from this rank's");
        }
    }
    ctx.all_gather_host(x.data, x.nbytes(), ctx.output(0).data);
    return 0;
}
