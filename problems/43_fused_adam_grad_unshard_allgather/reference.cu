// Reference for PKB problem 43 on the toolkit: tk::adam_update (PKB's op sequence, each op rounded to
// the dtype) on copies of the shard into scratch, then ncclAllGather straight into the [W P] output.
#include "pkbw/solution.h"
#include "pkbw/toolkit/adam.cuh"
#include "pkbw/toolkit/check.cuh"

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::DType d = ctx.input(0).dtype;
    const long long p = ctx.input(0).numel();
    const std::size_t bytes = static_cast<std::size_t>(p) * pkbw::element_size(d);
    void* w = ctx.scratch("adam_shard", bytes);
    void* m = ctx.scratch("adam_exp_avg", bytes);
    void* v = ctx.scratch("adam_exp_avg_sq", bytes);
    PKBW_TRY(tk::adam_update(ctx, d, p, ctx.input(0).data, ctx.input(1).data, ctx.input(2).data,
                             ctx.input(3).data, w, m, v, tk::adam_hyper(ctx, tk::AdamRule::ScaledStep)));
    PKBW_CHECK(ctx, ncclAllGather(w, ctx.output(0).data, static_cast<std::size_t>(p), pkbw::nccl_dtype(d),
                                  ctx.nccl(), ctx.stream()));
    return tk::finish(ctx);
}
