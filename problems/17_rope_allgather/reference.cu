// Reference for PKB problem 17: a RoPE kernel (each op rounded to the dtype, as PyTorch's eager
// elementwise ops are), ncclAllGather of each result into [W, B, S, 8, 64], then a permute into
// [B, W*S, 8, 64] (concatenation along the sequence).
#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

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

constexpr int kHeads = 8;
constexpr int kDim = 64;

template <class T>
__device__ T round_op(float v) {
    return from_float<T>(v);
}

// x: [B*S, 8, 64]; cos/sin: [B*S, 64].
template <class T>
__global__ void rope(const T* x, const T* cs, const T* sn, T* y, long long positions) {
    const long long total = positions * kHeads * kDim;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const int d = static_cast<int>(i % kDim);
        const long long pos = i / (kHeads * kDim);
        const long long base = i - d;
        const float rotated =
            d < kDim / 2 ? -to_float(x[base + d + kDim / 2]) : to_float(x[base + d - kDim / 2]);
        const float a = to_float(round_op<T>(to_float(x[i]) * to_float(cs[pos * kDim + d])));
        const float b = to_float(round_op<T>(rotated * to_float(sn[pos * kDim + d])));
        y[i] = from_float<T>(a + b);
    }
}

// buf[w][b][j] -> out[b][w][j], j over `inner` elements (one rank's S*8*64 chunk of batch b).
template <class T>
__global__ void interleave(const T* buf, T* out, long long batch, long long inner, int world) {
    const long long total = batch * inner * world;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long w = i / (batch * inner);
        const long long b = (i / inner) % batch;
        const long long j = i % inner;
        out[(b * world + w) * inner + j] = buf[i];
    }
}

int grid_for(long long total) {
    return static_cast<int>(total / 256 + 1 < 8192 ? total / 256 + 1 : 8192);
}

template <class T>
int run(const pkbw::Context& ctx) {
    const pkbw::TensorView& q = ctx.input(0);
    const long long batch = q.shape[0], seq = q.shape[1];
    const long long local = q.numel();
    const std::size_t bytes = q.nbytes();
    T* rotated = static_cast<T*>(ctx.scratch("rope_rotated", 2 * bytes));
    T* gathered = static_cast<T*>(ctx.scratch("rope_gathered", 2 * bytes * ctx.world_size));
    for (int t = 0; t < 2; ++t) {
        rope<T><<<grid_for(local), 256, 0, ctx.stream()>>>(
            ctx.input(t).as<const T>(), ctx.input(2).as<const T>(), ctx.input(3).as<const T>(),
            rotated + t * local, batch * seq);
    }
    for (int t = 0; t < 2; ++t) {
        const ncclResult_t rc = ncclAllGather(rotated + t * local, gathered + t * local * ctx.world_size,
                                              bytes, ncclUint8, ctx.nccl(), ctx.stream());
        if (rc != ncclSuccess) {
            return ctx.fail(ncclGetErrorString(rc));
        }
    }
    for (int t = 0; t < 2; ++t) {
        interleave<T><<<grid_for(local * ctx.world_size), 256, 0, ctx.stream()>>>(
            gathered + t * local * ctx.world_size, ctx.output(t).as<T>(), batch, local / batch,
            ctx.world_size);
    }
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
        return ctx.fail("17_rope_allgather reference: dtype must be bf16, f16 or f32");
    }
    if (rc != 0) {
        return rc;
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
