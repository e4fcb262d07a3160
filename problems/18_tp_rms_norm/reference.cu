// Reference for PKB problem 18: per-row fp32 sum of squares, ncclAllReduce of the [M] sums (fp32, in
// place), then h * rsqrt(sum / (W*N) + eps) rounded to the dtype and multiplied by the weight.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

using pkbw::tk::from_float;
using pkbw::tk::to_float;

constexpr int kThreads = 256;

template <class T>
__global__ void normalise(const T* h, const T* w, const float* sums, T* out, long long n, float inv_hidden,
                          float eps) {
    const float scale = rsqrtf(sums[blockIdx.x] * inv_hidden + eps);
    for (long long j = threadIdx.x; j < n; j += kThreads) {
        const long long i = blockIdx.x * n + j;
        const T normed = from_float<T>(to_float(h[i]) * scale);
        out[i] = from_float<T>(to_float(w[j]) * to_float(normed));
    }
}

template <class T>
int run(const pkbw::Context& ctx) {
    const pkbw::TensorView& h = ctx.input(0);
    const long long m = h.shape[0], n = h.shape[1];
    const float eps = static_cast<float>(ctx.param("variance_epsilon", 1e-5));
    float* sums = static_cast<float*>(ctx.scratch("rms_sums", static_cast<std::size_t>(m) * sizeof(float)));
    PKBW_TRY(pkbw::tk::row_reduce(ctx, h.dtype, pkbw::tk::RowOp::SumSquares, h.data, m, n, sums));
    PKBW_CHECK(ctx, ncclAllReduce(sums, sums, static_cast<size_t>(m), ncclFloat32, ncclSum, ctx.nccl(),
                                  ctx.stream()));
    const float inv_hidden = 1.0f / static_cast<float>(n * ctx.world_size);
    normalise<T><<<static_cast<unsigned>(m), kThreads, 0, ctx.stream()>>>(
        h.as<const T>(), ctx.input(1).as<const T>(), sums, ctx.output(0).as<T>(), n, inv_hidden, eps);
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    PKBW_TRY(pkbw::tk::dispatch_float(ctx, ctx.input(0).dtype, "18_tp_rms_norm reference",
                                      [&](auto tag) { return run<typename decltype(tag)::type>(ctx); }));
    return pkbw::tk::finish(ctx);
}
