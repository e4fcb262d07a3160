// Reference for PKB problem 21: the toolkit's fp32 sum of squares over the three grads (a device
// scalar), ncclAllReduce of that scalar over WORLD, then the toolkit's clip: the norm is written and
// the grads are scaled in place by max_norm / norm when the norm exceeds max_norm.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/clip.cuh"
#include "pkbw/toolkit/reduce.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.param("norm_type", 2.0) != 2.0) {
        return ctx.fail("21 reference: only norm_type 2 is implemented (PKB's only value)");
    }
    const int count = ctx.num_inputs;
    if (count < 1 || count > pkbw::tk::kMaxClipTensors) {
        return ctx.fail("21 reference: between 1 and 8 gradient tensors");
    }
    pkbw::tk::TensorSpan spans[pkbw::tk::kMaxClipTensors];
    const pkbw::TensorView* grads[pkbw::tk::kMaxClipTensors];
    for (int k = 0; k < count; ++k) {
        spans[k] = {ctx.input(k).data, ctx.input(k).dtype, ctx.input(k).numel()};
        grads[k] = &ctx.input(k);
    }
    float* total = static_cast<float*>(ctx.scratch("clip21_total", sizeof(float)));
    PKBW_TRY(pkbw::tk::sum_of_squares(ctx, spans, count, total));
    PKBW_CHECK(ctx, ncclAllReduce(total, total, 1, ncclFloat32, ncclSum, ctx.nccl(), ctx.stream()));
    return pkbw::tk::clip_by_total(ctx, grads, count, total, ctx.output(0).as<float>(),
                                   static_cast<float>(ctx.param("max_norm", 1.0)));
}
