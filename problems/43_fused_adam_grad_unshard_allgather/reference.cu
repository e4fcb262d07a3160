// Reference for PKB problem 43: an elementwise Adam kernel that rounds to the dtype after every op
// PKB's torch code performs (in fp32 arithmetic, as torch's bf16 kernels compute), writing the
// updated shard to scratch, and an ncclAllGather of the shards straight into the [W P] output.
#include "pkbw/solution.h"

#include <cmath>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

template <class T>
__device__ float to_f(T v) {
    return static_cast<float>(v);
}
template <>
__device__ float to_f(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
template <class T>
__device__ T from_f(float v) {
    return static_cast<T>(v);
}
template <>
__device__ __nv_bfloat16 from_f(float v) {
    return __float2bfloat16(v);
}
template <>
__device__ __half from_f(float v) {
    return __float2half(v);
}
template <class T>
__device__ float rnd(float v) {
    return to_f(from_f<T>(v));
}

struct AdamArgs {
    float lr, beta1, beta2, eps, bc1, bc2;
};

// m.mul_(b1).add_(g, 1-b1); v.mul_(b2).addcmul_(g, g, 1-b2); w += (m/bc1).div(sqrt(v/bc2) + eps) * -lr
template <class T>
__global__ void adam(const T* g, const T* w, const T* m0, const T* v0, T* w_out, long long count,
                     AdamArgs a) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i >= count)
        return;
    const float gi = to_f(g[i]);
    const float m = rnd<T>(rnd<T>(to_f(m0[i]) * a.beta1) + (1.f - a.beta1) * gi);
    const float v = rnd<T>(rnd<T>(to_f(v0[i]) * a.beta2) + (1.f - a.beta2) * gi * gi);
    const float denom = rnd<T>(rnd<T>(sqrtf(rnd<T>(v / a.bc2))) + a.eps);
    w_out[i] = from_f<T>(to_f(w[i]) + rnd<T>(rnd<T>(rnd<T>(m / a.bc1) / denom) * -a.lr));
}

template <class T>
int run(const pkbw::Context& ctx) {
    const long long p = ctx.input(0).numel();
    const double beta1 = ctx.param("beta1", 0.9), beta2 = ctx.param("beta2", 0.999),
                 step = ctx.param("step", 1);
    const AdamArgs args{static_cast<float>(ctx.param("lr", 1e-3)),
                        static_cast<float>(beta1),
                        static_cast<float>(beta2),
                        static_cast<float>(ctx.param("eps", 1e-8)),
                        static_cast<float>(1.0 - std::pow(beta1, step)),
                        static_cast<float>(1.0 - std::pow(beta2, step))};
    auto* shard = static_cast<T*>(ctx.scratch("adam_shard", p * sizeof(T)));
    adam<T><<<static_cast<unsigned>((p + 255) / 256), 256, 0, ctx.stream()>>>(
        ctx.input(0).as<const T>(), ctx.input(1).as<const T>(), ctx.input(2).as<const T>(),
        ctx.input(3).as<const T>(), shard, p, args);
    if (ncclAllGather(shard, ctx.output(0).data, static_cast<std::size_t>(p),
                      pkbw::nccl_dtype(ctx.input(0).dtype), ctx.nccl(), ctx.stream()) != ncclSuccess) {
        return ctx.fail("43 reference: ncclAllGather failed");
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    switch (ctx.input(0).dtype) {
    case pkbw::DType::BF16:
        return run<__nv_bfloat16>(ctx);
    case pkbw::DType::F16:
        return run<__half>(ctx);
    case pkbw::DType::F32:
        return run<float>(ctx);
    default:
        return ctx.fail("43 reference: dtype must be bf16, f16 or f32");
    }
}
