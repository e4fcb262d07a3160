// Reference for PKB problem 73 (Megatron vocab-parallel cross-entropy): a row-max kernel,
// ncclAllReduce(MAX) in the dtype, a kernel that subtracts the max in place and writes the row's
// target logit (zero where another rank owns the target) and its sum of exp (fp32 accumulation
// of dtype-rounded exps, rounded once, as torch's sum), one ncclAllReduce(SUM) over both
// [2, rows] in the dtype (PKB's two SUM all-reduces fused: same op, same dtype, same values),
// and a kernel for log(sum) - target.
#include "pkbw/solution.h"

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kThreads = 128;

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

__device__ float block_reduce(float v, bool is_max) {
    __shared__ float part[kThreads / 32];
    for (int off = 16; off > 0; off /= 2) {
        const float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    if (threadIdx.x % 32 == 0)
        part[threadIdx.x / 32] = v;
    __syncthreads();
    v = part[0];
    for (int w = 1; w < kThreads / 32; ++w)
        v = is_max ? fmaxf(v, part[w]) : v + part[w];
    __syncthreads();
    return v;
}

template <class T>
__global__ void row_max(const T* logits, T* maxima, long long local) {
    float m = -INFINITY;
    for (long long j = threadIdx.x; j < local; j += kThreads)
        m = fmaxf(m, to_f(logits[blockIdx.x * local + j]));
    m = block_reduce(m, true);
    if (threadIdx.x == 0)
        maxima[blockIdx.x] = from_f<T>(m);
}

// parts[row] = shifted target logit or 0, parts[rows + row] = sum of exp.
template <class T>
__global__ void shift_and_sum(T* logits, const T* maxima, const std::int64_t* target, T* parts,
                              long long rows, long long local, long long start) {
    const long long row = blockIdx.x;
    const float m = to_f(maxima[row]);
    float sum = 0.f;
    for (long long j = threadIdx.x; j < local; j += kThreads) {
        const T shifted = from_f<T>(to_f(logits[row * local + j]) - m);
        logits[row * local + j] = shifted;
        sum += to_f(from_f<T>(expf(to_f(shifted))));
    }
    sum = block_reduce(sum, false);
    if (threadIdx.x == 0) {
        const long long t = target[row] - start;
        parts[row] = (t >= 0 && t < local) ? logits[row * local + t] : from_f<T>(0.f);
        parts[rows + row] = from_f<T>(sum);
    }
}

template <class T>
__global__ void finish(const T* parts, T* out, long long rows) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < rows)
        out[i] = from_f<T>(to_f(from_f<T>(logf(to_f(parts[rows + i])))) - to_f(parts[i]));
}

template <class T>
int run(const pkbw::Context& ctx) {
    const pkbw::TensorView& logits = ctx.input(0);
    const long long local = logits.shape[logits.ndim - 1];
    const long long rows = logits.numel() / local;
    const ncclDataType_t type = pkbw::nccl_dtype(logits.dtype);
    auto* maxima = static_cast<T*>(ctx.scratch("ce_max", rows * sizeof(T)));
    auto* parts = static_cast<T*>(ctx.scratch("ce_parts", 2 * rows * sizeof(T)));
    row_max<T>
        <<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream()>>>(logits.as<const T>(), maxima, local);
    if (ncclAllReduce(maxima, maxima, rows, type, ncclMax, ctx.nccl(), ctx.stream()) != ncclSuccess) {
        return ctx.fail("73 reference: ncclAllReduce(max) failed");
    }
    shift_and_sum<T><<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream()>>>(
        logits.as<T>(), maxima, ctx.input(1).as<const std::int64_t>(), parts, rows, local, ctx.rank * local);
    if (ncclAllReduce(parts, parts, 2 * rows, type, ncclSum, ctx.nccl(), ctx.stream()) != ncclSuccess) {
        return ctx.fail("73 reference: ncclAllReduce(sum) failed");
    }
    finish<T><<<static_cast<unsigned>((rows + 255) / 256), 256, 0, ctx.stream()>>>(
        parts, ctx.output(0).as<T>(), rows);
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
        return ctx.fail("73 reference: dtype must be bf16, f16 or f32");
    }
}
