// Reference for PKB problem 45: ncclReduceScatter (SUM in D) into a scratch shard, then one block
// per row: the value divided by W and rounded to D (PKB's in-place div_ on the D tensor), the fp32
// mean of squares (toolkit block_reduce), rsqrt(mean + eps), x * rms * gamma in fp32, rounded to D.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

constexpr int kThreads = 128;

using pkbw::tk::from_float;
using pkbw::tk::round_as;
using pkbw::tk::to_float;

template <class T>
__global__ void rms_norm_rows(const T* summed, const T* gamma, T* out, long long hidden, float world,
                              float eps) {
    const T* row = summed + blockIdx.x * hidden;
    float s = 0.f;
    for (long long j = threadIdx.x; j < hidden; j += kThreads) {
        const float x = round_as<T>(to_float(row[j]) / world);
        s += x * x;
    }
    s = pkbw::tk::block_reduce<kThreads>(s, pkbw::tk::SumOp{});
    const float rms = rsqrtf(s / static_cast<float>(hidden) + eps);
    for (long long j = threadIdx.x; j < hidden; j += kThreads) {
        const float x = round_as<T>(to_float(row[j]) / world);
        out[blockIdx.x * hidden + j] = from_float<T>(x * rms * to_float(gamma[j]));
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& out = ctx.output(0);
    const long long rows = out.shape[0], hidden = out.shape[1];
    return pkbw::tk::dispatch_float(ctx, out.dtype, "45 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* summed = static_cast<T*>(ctx.scratch("rs45_summed", out.nbytes()));
        PKBW_CHECK(ctx, ncclReduceScatter(ctx.input(0).data, summed, static_cast<size_t>(rows * hidden),
                                          pkbw::nccl_dtype(out.dtype), ncclSum, ctx.nccl(), ctx.stream()));
        rms_norm_rows<T><<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream()>>>(
            summed, ctx.input(1).as<const T>(), out.as<T>(), hidden, static_cast<float>(ctx.world_size),
            static_cast<float>(ctx.param("eps", 1e-5)));
        return pkbw::tk::finish(ctx);
    });
}
