// Reference for PKB problem 53: the toolkit's delayed-scaling e4m3 round trip of the local shard
// (absmax into the history, scale, round trip into a scratch tensor in D), then one ncclAllGather of
// the round-tripped shards into the [W*P] output.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/fp8_scaling.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& shard = ctx.input(0);
    const pkbw::TensorView& history = ctx.input(1);
    void* recon = ctx.scratch("fp8ag53_recon", shard.nbytes());
    PKBW_TRY(pkbw::tk::fp8_delayed_round_trip(ctx, shard.dtype, shard.data, shard.numel(), history.data,
                                              ctx.output(1).data, static_cast<int>(history.numel()), recon));
    PKBW_CHECK(ctx,
               ncclAllGather(recon, ctx.output(0).data, shard.nbytes(), ncclUint8, ctx.nccl(), ctx.stream()));
    return 0;
}
