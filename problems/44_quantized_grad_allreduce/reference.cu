// Reference for PKB problem 44: one CUDA block per quantisation block computes the absmax, the
// scale, and the dequantised fp32 values (as torch on CUDA: the division by the Python scalar 127
// is a multiplication by the fp32 reciprocal 1/127; x / scale a true division; rintf rounds half to
// even), an in-place fp32 ncclAllReduce, then acc * (1/W) (torch's div_ by a Python int, again a
// reciprocal multiplication) cast to D.
#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kThreads = 128;

__device__ float to_float(float v) {
    return v;
}
__device__ float to_float(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
__device__ float to_float(__half v) {
    return __half2float(v);
}
template <class T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) {
    return v;
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
    return __float2bfloat16(v);
}
template <>
__device__ __half from_float<__half>(float v) {
    return __float2half(v);
}

template <class T>
__global__ void quant_dequant(const T* x, float* rec, long long n, int block) {
    __shared__ float part[kThreads];
    const long long begin = blockIdx.x * static_cast<long long>(block);
    float m = 0.f; // the zero padding of the last block takes part in the absmax, as in PKB
    for (int j = threadIdx.x; j < block; j += kThreads) {
        const long long i = begin + j;
        if (i < n)
            m = fmaxf(m, fabsf(to_float(x[i])));
    }
    part[threadIdx.x] = m;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + step]);
        __syncthreads();
    }
    const float scale = fmaxf(part[0], 1e-8f) * (1.0f / 127.0f);
    for (int j = threadIdx.x; j < block; j += kThreads) {
        const long long i = begin + j;
        if (i < n) {
            const float q = fminf(fmaxf(rintf(__fdiv_rn(to_float(x[i]), scale)), -127.f), 127.f);
            rec[i] = q * scale;
        }
    }
}

template <class T>
__global__ void mean_to_dtype(const float* acc, T* out, long long n, float inv_world) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x)
        out[i] = from_float<T>(acc[i] * inv_world);
}

template <class T>
int run(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const long long n = x.numel();
    const int block = static_cast<int>(ctx.param("block_size", 128));
    if (block < 1) {
        return ctx.fail("44 reference: block_size must be at least 1");
    }
    float* rec = static_cast<float*>(ctx.scratch("q44_rec", static_cast<std::size_t>(n) * sizeof(float)));
    const long long blocks = (n + block - 1) / block;
    quant_dequant<T>
        <<<static_cast<unsigned>(blocks), kThreads, 0, ctx.stream()>>>(x.as<const T>(), rec, n, block);
    const ncclResult_t rc =
        ncclAllReduce(rec, rec, static_cast<size_t>(n), ncclFloat32, ncclSum, ctx.nccl(), ctx.stream());
    if (rc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc));
    }
    const float inv_world = 1.0f / static_cast<float>(ctx.world_size);
    mean_to_dtype<T>
        <<<static_cast<unsigned>(n / 256 + 1 > 4096 ? 4096 : n / 256 + 1), 256, 0, ctx.stream()>>>(
            rec, ctx.output(0).as<T>(), n, inv_world);
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    int rc = 0;
    switch (ctx.input(0).dtype) {
    case pkbw::DType::BF16:
        rc = run<__nv_bfloat16>(ctx);
        break;
    case pkbw::DType::F16:
        rc = run<__half>(ctx);
        break;
    case pkbw::DType::F32:
        rc = run<float>(ctx);
        break;
    default:
        return ctx.fail("44 reference: dtype must be bf16, f16 or f32");
    }
    if (rc != 0) {
        return rc;
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
