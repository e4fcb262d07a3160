// Reference for PKB problem 21: the toolkit's fp32 sum of squares over the three grads (a device
// scalar), ncclAllReduce of that scalar over WORLD, then one kernel that takes the square root,
// writes the norm and scales the grads in place by max_norm / norm when the norm exceeds max_norm
// (PKB's t.mul_(coef) with an fp32 coef, rounded to the grad dtype).
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

constexpr int kMaxGrads = 8;

template <class T>
struct Grads {
    T* data[kMaxGrads];
    long long numel[kMaxGrads];
    int count;
};

template <class T>
__global__ void clip(Grads<T> grads, const float* total, float* norm_out, float max_norm) {
    const float norm = sqrtf(*total);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *norm_out = norm;
    if (!(norm > max_norm))
        return;
    const float coef = max_norm / norm;
    for (int k = 0; k < grads.count; ++k)
        for (long long i = PKBW_GRID_STRIDE_BEGIN; i < grads.numel[k]; i += PKBW_GRID_STRIDE_STEP)
            grads.data[k][i] = pkbw::tk::from_float<T>(pkbw::tk::to_float(grads.data[k][i]) * coef);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.param("norm_type", 2.0) != 2.0) {
        return ctx.fail("21 reference: only norm_type 2 is implemented (PKB's only value)");
    }
    if (ctx.num_inputs < 1 || ctx.num_inputs > kMaxGrads) {
        return ctx.fail("21 reference: between 1 and 8 gradient tensors");
    }
    pkbw::tk::TensorSpan spans[kMaxGrads];
    long long largest = 0;
    for (int k = 0; k < ctx.num_inputs; ++k) {
        spans[k] = {ctx.input(k).data, ctx.input(k).dtype, ctx.input(k).numel()};
        largest = ctx.input(k).numel() > largest ? ctx.input(k).numel() : largest;
    }
    float* total = static_cast<float*>(ctx.scratch("clip21_total", sizeof(float)));
    PKBW_TRY(pkbw::tk::sum_of_squares(ctx, spans, ctx.num_inputs, total));
    PKBW_CHECK(ctx, ncclAllReduce(total, total, 1, ncclFloat32, ncclSum, ctx.nccl(), ctx.stream()));
    const float max_norm = static_cast<float>(ctx.param("max_norm", 1.0));
    return pkbw::tk::dispatch_float(ctx, ctx.input(0).dtype, "21 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        Grads<T> grads{};
        grads.count = ctx.num_inputs;
        for (int k = 0; k < ctx.num_inputs; ++k) {
            if (ctx.input(k).dtype != ctx.input(0).dtype) {
                return ctx.fail("21 reference: the grads must share one dtype");
            }
            grads.data[k] = ctx.input(k).as<T>();
            grads.numel[k] = ctx.input(k).numel();
        }
        clip<T><<<pkbw::tk::grid_for(largest), 256, 0, ctx.stream()>>>(grads, total,
                                                                       ctx.output(0).as<float>(), max_norm);
        return pkbw::tk::finish(ctx);
    });
}
