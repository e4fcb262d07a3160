// Reference for PKB problem 35: as PKB, the shapes travel first (an ncclAllGather of each rank's
// int64 [ndim] shape), then the data. Every rank's shard has the same shape here, so one
// ncclAllGather of the bytes concatenates along dimension 0; a mismatching peer shape is an error
// rather than a silent misplacement.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"

#include <cstdint>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const int world = ctx.world_size;
    const std::size_t shape_bytes = static_cast<std::size_t>(x.ndim) * sizeof(std::int64_t);
    auto* shapes = static_cast<std::int64_t*>(ctx.scratch("ulysses35_shapes", shape_bytes * (world + 1)));
    PKBW_CHECK(ctx, cudaMemcpyAsync(shapes + world * x.ndim, x.shape, shape_bytes, cudaMemcpyHostToDevice,
                                    ctx.stream()));
    PKBW_CHECK(ctx, ncclAllGather(shapes + world * x.ndim, shapes, static_cast<size_t>(x.ndim), ncclInt64,
                                  ctx.nccl(), ctx.stream()));
    std::vector<std::int64_t> all(static_cast<std::size_t>(world * x.ndim));
    PKBW_CHECK(
        ctx, cudaMemcpyAsync(all.data(), shapes, shape_bytes * world, cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream())); // PKB's .tolist(): the sizes are needed on the host
    for (int r = 0; r < world; ++r) {
        for (int d = 0; d < x.ndim; ++d) {
            if (all[r * x.ndim + d] != x.shape[d]) {
                return ctx.fail("35 reference: a peer's shard shape differs from this rank's");
            }
        }
    }
    PKBW_CHECK(ctx,
               ncclAllGather(x.data, ctx.output(0).data, x.nbytes(), ncclUint8, ctx.nccl(), ctx.stream()));
    return 0;
}
