// Row, column, block and whole-tensor reductions on the device for references (pkbw reference
// toolkit). Everything accumulates in fp32 (PyTorch's rule for bf16/f16 reductions) in a fixed order
// (no atomics): a reference gives the same bits on every run.
//
//     PKBW_TRY(pkbw::tk::row_reduce(ctx, h.dtype, pkbw::tk::RowOp::SumSquares, h.data, rows, n, sums));
//     PKBW_TRY(pkbw::tk::row_logsumexp(ctx, logits.dtype, logits.data, rows, vocab, lse));
//     PKBW_TRY(pkbw::tk::block_absmax(ctx, x.dtype, x.data, x.numel(), 128, amax));
//     PKBW_TRY(pkbw::tk::sum_of_squares(ctx, grads, 3, total));   // Σ‖g‖² over three tensors
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cmath>

namespace pkbw::tk {

struct SumOp {
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
// NaN-propagating, as torch.max.
struct MaxOp {
    __device__ __forceinline__ float operator()(float a, float b) const { return (a > b || a != a) ? a : b; }
};

// Reduces one value per thread over the block with a halving tree in shared memory (kThreads, a power
// of two, must be blockDim.x; every thread must call it). Every thread gets the result.
template <int kThreads, class Op>
__device__ float block_reduce(float v, Op op) {
    __shared__ float part[kThreads];
    part[threadIdx.x] = v;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            part[threadIdx.x] = op(part[threadIdx.x], part[threadIdx.x + step]);
        __syncthreads();
    }
    const float result = part[0];
    __syncthreads(); // part may be reused by the next call
    return result;
}

// The absolute maximum of xb[0..count) over one warp (lanes stride over the block); every lane gets it.
template <class T>
__device__ float warp_absmax(const T* xb, int count, int lane) {
    float amax = 0.f;
    for (int i = lane; i < count; i += 32)
        amax = fmaxf(amax, fabsf(to_float(xb[i])));
    for (int off = 16; off > 0; off >>= 1)
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
    return amax;
}

// MeanSquares is SumSquares / n (RMS = sqrt of it; an RMSNorm scale = rsqrt(it + eps)).
enum class RowOp { Sum, SumSquares, MeanSquares, Max, AbsMax };

// Loaders for the generic row/column reductions: value (row, col) as fp32.
template <class T>
struct Elements {
    const T* data;
    long long ld; // elements between rows
    __device__ __forceinline__ float operator()(long long row, long long col) const {
        return to_float(data[row * ld + col]);
    }
};

namespace detail {

constexpr int kRowThreads = 256;

template <class T>
__global__ void row_reduce_kernel(const T* x, long long n, RowOp op, float* out) {
    const T* row = x + blockIdx.x * n;
    float acc = op == RowOp::Max ? -INFINITY : 0.f;
    for (long long j = threadIdx.x; j < n; j += kRowThreads) {
        const float v = to_float(row[j]);
        switch (op) {
        case RowOp::Sum:
            acc += v;
            break;
        case RowOp::SumSquares:
        case RowOp::MeanSquares:
            acc += v * v;
            break;
        case RowOp::Max:
            acc = MaxOp{}(acc, v);
            break;
        case RowOp::AbsMax:
            acc = fmaxf(acc, fabsf(v));
            break;
        }
    }
    const bool summed = op == RowOp::Sum || op == RowOp::SumSquares || op == RowOp::MeanSquares;
    const float r =
        summed ? block_reduce<kRowThreads>(acc, SumOp{}) : block_reduce<kRowThreads>(acc, MaxOp{});
    if (threadIdx.x == 0)
        out[blockIdx.x] = op == RowOp::MeanSquares ? r / static_cast<float>(n) : r;
}

// lse = max + log(sum exp(x - max)) per row, as torch.logsumexp; max and the sum on request.
template <class T>
__global__ void row_logsumexp_kernel(const T* x, long long n, float* lse, float* max_out, float* sumexp_out) {
    const T* row = x + blockIdx.x * n;
    float m = -INFINITY;
    for (long long j = threadIdx.x; j < n; j += kRowThreads)
        m = MaxOp{}(m, to_float(row[j]));
    m = block_reduce<kRowThreads>(m, MaxOp{});
    // A row of -inf has lse -inf (exp(x - max) would be NaN).
    const float shift = isinf(m) ? 0.f : m;
    float s = 0.f;
    for (long long j = threadIdx.x; j < n; j += kRowThreads)
        s += expf(to_float(row[j]) - shift);
    s = block_reduce<kRowThreads>(s, SumOp{});
    if (threadIdx.x == 0) {
        if (lse)
            lse[blockIdx.x] = shift + logf(s);
        if (max_out)
            max_out[blockIdx.x] = m;
        if (sumexp_out)
            sumexp_out[blockIdx.x] = s;
    }
}

// One block of 32 columns x 32 row lanes; lanes stride over rows, then a tree per column.
template <class Load, class Out>
__global__ void column_sums_kernel(Load load, long long rows, long long cols, Out* out) {
    __shared__ float part[32][33];
    const long long col = blockIdx.x * 32LL + threadIdx.x;
    float acc = 0.f;
    if (col < cols) {
        for (long long row = threadIdx.y; row < rows; row += 32)
            acc += load(row, col);
    }
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    for (int step = 16; step > 0; step >>= 1) {
        if (threadIdx.y < step)
            part[threadIdx.y][threadIdx.x] += part[threadIdx.y + step][threadIdx.x];
        __syncthreads();
    }
    if (threadIdx.y == 0 && col < cols)
        out[col] = from_float<Out>(part[0][threadIdx.x]);
}

template <class Load, class Out>
__global__ void row_sums_kernel(Load load, long long cols, Out* out) {
    float acc = 0.f;
    for (long long j = threadIdx.x; j < cols; j += kRowThreads)
        acc += load(blockIdx.x, j);
    acc = block_reduce<kRowThreads>(acc, SumOp{});
    if (threadIdx.x == 0)
        out[blockIdx.x] = from_float<Out>(acc);
}

template <class T>
__global__ void block_absmax_kernel(const T* x, long long blocks, int block, float* out) {
    const long long warp = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (warp >= blocks)
        return;
    const float amax = warp_absmax(x + warp * block, block, lane);
    if (lane == 0)
        out[warp] = amax;
}

struct SquaresInput {
    const void* data[8];
    DType dtype[8];
    long long count[8];
};

constexpr int kSquaresBlocks = 128;

// blockIdx.y = tensor; each block's fp32 partial into partials[tensor * kSquaresBlocks + blockIdx.x].
__global__ void squares_partials_kernel(SquaresInput in, float* partials) {
    const int t = blockIdx.y;
    float acc = 0.f;
    for (long long i = blockIdx.x * static_cast<long long>(kRowThreads) + threadIdx.x; i < in.count[t];
         i += static_cast<long long>(kSquaresBlocks) * kRowThreads) {
        const float v = load_as_float(in.data[t], in.dtype[t], i);
        acc += v * v;
    }
    acc = block_reduce<kRowThreads>(acc, SumOp{});
    if (threadIdx.x == 0)
        partials[t * kSquaresBlocks + blockIdx.x] = acc;
}

// One block: per tensor the sum of its partials (per_tensor[t]) and the sum of those (total).
__global__ void squares_final_kernel(const float* partials, int tensors, float* total, float* per_tensor) {
    float sum = 0.f;
    for (int t = 0; t < tensors; ++t) {
        const float v = block_reduce<kSquaresBlocks>(
            threadIdx.x < kSquaresBlocks ? partials[t * kSquaresBlocks + threadIdx.x] : 0.f, SumOp{});
        if (per_tensor && threadIdx.x == 0)
            per_tensor[t] = v;
        sum += v;
    }
    if (total && threadIdx.x == 0)
        *total = sum;
}

} // namespace detail

// out[r] (fp32, device) = the reduction of row r of x [rows, n] (packed rows of dtype bf16/f16/f32).
inline int row_reduce(const Context& ctx, DType dtype, RowOp op, const void* x, long long rows, long long n,
                      float* out) {
    if (rows == 0)
        return 0;
    return dispatch_float(ctx, dtype, "pkbw::tk::row_reduce", [&](auto tag) {
        using T = typename decltype(tag)::type;
        detail::row_reduce_kernel<T><<<static_cast<unsigned>(rows), detail::kRowThreads, 0, ctx.stream()>>>(
            static_cast<const T*>(x), n, op, out);
        PKBW_CHECK(ctx, cudaGetLastError());
        return 0;
    });
}

// Per row of x [rows, n]: lse = max + log Σ exp(x − max) (fp32), and optionally the max and the sum of
// exponentials (each pointer may be null).
inline int row_logsumexp(const Context& ctx, DType dtype, const void* x, long long rows, long long n,
                         float* lse, float* max_out = nullptr, float* sumexp_out = nullptr) {
    if (rows == 0)
        return 0;
    return dispatch_float(ctx, dtype, "pkbw::tk::row_logsumexp", [&](auto tag) {
        using T = typename decltype(tag)::type;
        detail::row_logsumexp_kernel<T>
            <<<static_cast<unsigned>(rows), detail::kRowThreads, 0, ctx.stream()>>>(
                static_cast<const T*>(x), n, lse, max_out, sumexp_out);
        PKBW_CHECK(ctx, cudaGetLastError());
        return 0;
    });
}

// out[c] = Σ_r load(r, c) over rows (fp32 accumulation, rounded to Out once). Load is a device functor
// (row, col) -> float, e.g. Elements<T>{ptr, cols}; Out is float, __half or __nv_bfloat16.
template <class Load, class Out>
int column_sums(const Context& ctx, Load load, long long rows, long long cols, Out* out) {
    if (cols == 0)
        return 0;
    detail::column_sums_kernel<<<static_cast<unsigned>((cols + 31) / 32), dim3(32, 32), 0, ctx.stream()>>>(
        load, rows, cols, out);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

// out[r] = Σ_c load(r, c) over cols (fp32 accumulation, rounded to Out once).
template <class Load, class Out>
int row_sums(const Context& ctx, Load load, long long rows, long long cols, Out* out) {
    if (rows == 0)
        return 0;
    detail::row_sums_kernel<<<static_cast<unsigned>(rows), detail::kRowThreads, 0, ctx.stream()>>>(load, cols,
                                                                                                   out);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

// out[b] = max |x| over elements [b·block, (b+1)·block) of x (count elements; count/block blocks).
inline int block_absmax(const Context& ctx, DType dtype, const void* x, long long count, int block,
                        float* out) {
    if (block <= 0 || count % block != 0)
        return ctx.fail("pkbw::tk::block_absmax: the element count must be a multiple of a positive block");
    const long long blocks = count / block;
    if (blocks == 0)
        return 0;
    return dispatch_float(ctx, dtype, "pkbw::tk::block_absmax", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const unsigned grid = static_cast<unsigned>((blocks * 32 + 255) / 256);
        detail::block_absmax_kernel<T>
            <<<grid, 256, 0, ctx.stream()>>>(static_cast<const T*>(x), blocks, block, out);
        PKBW_CHECK(ctx, cudaGetLastError());
        return 0;
    });
}

// A tensor for sum_of_squares: `count` elements of dtype (bf16, f16, f32 or f64) on the device.
struct TensorSpan {
    const void* data;
    DType dtype;
    long long count;
};

// *total (fp32, device) = Σ_t Σ_i x_t[i]², per_tensor[t] = Σ_i x_t[i]² when not null; up to 8 tensors.
// Uses ctx.scratch("pkbw_tk_sum_of_squares").
inline int sum_of_squares(const Context& ctx, const TensorSpan* tensors, int count, float* total,
                          float* per_tensor = nullptr) {
    if (count < 1 || count > 8)
        return ctx.fail("pkbw::tk::sum_of_squares: between 1 and 8 tensors");
    detail::SquaresInput in{};
    for (int t = 0; t < count; ++t) {
        in.data[t] = tensors[t].data;
        in.dtype[t] = tensors[t].dtype;
        in.count[t] = tensors[t].count;
    }
    auto* partials = static_cast<float*>(
        ctx.scratch("pkbw_tk_sum_of_squares", sizeof(float) * detail::kSquaresBlocks * 8));
    detail::squares_partials_kernel<<<dim3(detail::kSquaresBlocks, static_cast<unsigned>(count)),
                                      detail::kRowThreads, 0, ctx.stream()>>>(in, partials);
    detail::squares_final_kernel<<<1, detail::kSquaresBlocks, 0, ctx.stream()>>>(partials, count, total,
                                                                                 per_tensor);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

} // namespace pkbw::tk
