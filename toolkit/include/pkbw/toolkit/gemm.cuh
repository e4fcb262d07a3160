// Row-major GEMMs on cuBLAS for references (pkbw reference toolkit).
//
//     pkbw::tk::Gemm g;                 // C[m, n] = op(A)[m, k] · op(B)[k, n] (+ bias[n])
//     g.dtype = x.dtype; g.m = rows; g.n = out; g.k = in;
//     g.a = x.data; g.b = w.data; g.trans_b = true; g.bias = b.data; g.c = y.data;   // F.linear
//     PKBW_TRY(pkbw::tk::gemm(ctx, g));
//
// Numerics: bf16/f16/f32 operands accumulate in fp32 (CUBLAS_COMPUTE_32F; TF32 is never used, so
// f32 GEMMs are true fp32 like torch with allow_tf32 = False), f64 operands in f64; C is rounded once
// to its dtype. A bias is added to the fp32 accumulator before that rounding (C is pre-filled with the
// bias rows and beta = 1), as torch's addmm epilogue does. Split-K reductions stay in fp32: the handle
// sets CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION. cuBLAS's default math mode allows a split-K
// algorithm to add its partial sums in the output type (bf16/f16), which rounds every partial sum and
// moves C by an ulp or more wherever the heuristic splits K (small C, long K: the LoRA factors' x·Aᵀ
// of 32, the weight gradients dᵀ·x of 40-47), while the host oracles and the samples' own dot
// products round once. The cross-check's PKBXC_CUBLAS_REDUCED_PRECISION=off runs PyTorch the same way
// (docs/problems.md).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cublas_v2.h>

namespace pkbw::tk {

// The library's cuBLAS handle, created on first use with the default math mode (no TF32) and no
// reduced-precision (output-type) split-K reductions, and set to the caller's stream on every call. One per
// loaded library (each rank is its own process); never destroyed, since a static destructor may run after the
// CUDA context is gone.
inline cublasHandle_t cublas_handle() {
    static cublasHandle_t handle = [] {
        cublasHandle_t created = nullptr;
        if (cublasCreate(&created) == CUBLAS_STATUS_SUCCESS)
            cublasSetMathMode(created,
                              static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                                        CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
        return created;
    }();
    return handle;
}

// The cuBLAS element type of a dtype; false for dtypes the GEMM wrapper does not take.
inline bool cuda_data_type(DType dtype, cudaDataType_t& type) {
    switch (dtype) {
    case DType::BF16:
        type = CUDA_R_16BF;
        return true;
    case DType::F16:
        type = CUDA_R_16F;
        return true;
    case DType::F32:
        type = CUDA_R_32F;
        return true;
    case DType::F64:
        type = CUDA_R_64F;
        return true;
    default:
        return false;
    }
}

// One row-major GEMM (or a strided batch of them). Leading dimensions of 0 mean packed rows:
// A is stored [m, k] ([k, m] when trans_a), B [k, n] ([n, k] when trans_b), C [m, n].
struct Gemm {
    DType dtype = DType::F32; // of A, B, C and the bias
    long long m = 0, n = 0, k = 0;
    const void* a = nullptr;
    bool trans_a = false;
    long long lda = 0;
    const void* b = nullptr;
    bool trans_b = false;
    long long ldb = 0;
    void* c = nullptr;
    long long ldc = 0;
    const void* bias = nullptr; // [n] of dtype, added to every row of C; needs beta == 0
    double alpha = 1.0, beta = 0.0;
    long long batch = 1; // > 1: strided batched, the strides in elements
    long long stride_a = 0, stride_b = 0, stride_c = 0;
};

namespace detail {

template <class Word>
__global__ void fill_bias_rows(const Word* bias, Word* c, long long rows, long long n, long long ldc,
                               long long batch, long long stride_c) {
    const long long total = batch * rows * n;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP) {
        const long long col = i % n, row = (i / n) % rows, b = i / (n * rows);
        c[b * stride_c + row * ldc + col] = bias[col];
    }
}

inline int fill_bias(const Context& ctx, const Gemm& g, long long ldc) {
    const long long total = g.batch * g.m * g.n;
    const unsigned grid = grid_for(total);
    switch (element_size(g.dtype)) {
    case 2:
        fill_bias_rows<<<grid, 256, 0, ctx.stream()>>>(static_cast<const unsigned short*>(g.bias),
                                                       static_cast<unsigned short*>(g.c), g.m, g.n, ldc,
                                                       g.batch, g.stride_c);
        break;
    case 4:
        fill_bias_rows<<<grid, 256, 0, ctx.stream()>>>(static_cast<const unsigned*>(g.bias),
                                                       static_cast<unsigned*>(g.c), g.m, g.n, ldc, g.batch,
                                                       g.stride_c);
        break;
    default:
        fill_bias_rows<<<grid, 256, 0, ctx.stream()>>>(static_cast<const unsigned long long*>(g.bias),
                                                       static_cast<unsigned long long*>(g.c), g.m, g.n, ldc,
                                                       g.batch, g.stride_c);
        break;
    }
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

} // namespace detail

// Runs g on ctx.stream(). Returns 0, or ctx.fail naming the bad argument or cuBLAS's error.
inline int gemm(const Context& ctx, const Gemm& g) {
    cudaDataType_t type;
    if (!cuda_data_type(g.dtype, type))
        return ctx.fail("pkbw::tk::gemm: dtype must be bf16, f16, f32 or f64");
    if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 1)
        return ctx.fail("pkbw::tk::gemm: m, n, k must be >= 0 and batch >= 1");
    if (g.bias && g.beta != 0.0)
        return ctx.fail("pkbw::tk::gemm: a bias needs beta == 0");
    if (g.m == 0 || g.n == 0)
        return 0;
    // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: B enters first, and a row-major
    // operand stored untransposed is, read column-major, already the transpose cuBLAS needs.
    const long long lda = g.lda ? g.lda : (g.trans_a ? g.m : g.k);
    const long long ldb = g.ldb ? g.ldb : (g.trans_b ? g.k : g.n);
    const long long ldc = g.ldc ? g.ldc : g.n;
    const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    double beta = g.beta;
    if (g.bias) {
        PKBW_TRY(detail::fill_bias(ctx, g, ldc));
        beta = 1.0;
    }
    const cublasHandle_t handle = cublas_handle();
    if (!handle)
        return ctx.fail("pkbw::tk::gemm: cublasCreate failed");
    PKBW_CHECK(ctx, cublasSetStream(handle, ctx.stream()));
    const bool f64 = g.dtype == DType::F64;
    const float alpha32 = static_cast<float>(g.alpha), beta32 = static_cast<float>(beta);
    const void* alpha = f64 ? static_cast<const void*>(&g.alpha) : &alpha32;
    const void* beta_ptr = f64 ? static_cast<const void*>(&beta) : &beta32;
    const cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
    const int n = static_cast<int>(g.n), m = static_cast<int>(g.m), k = static_cast<int>(g.k);
    if (g.batch == 1) {
        PKBW_CHECK(ctx, cublasGemmEx(handle, op_b, op_a, n, m, k, alpha, g.b, type, static_cast<int>(ldb),
                                     g.a, type, static_cast<int>(lda), beta_ptr, g.c, type,
                                     static_cast<int>(ldc), compute, CUBLAS_GEMM_DEFAULT));
    } else {
        PKBW_CHECK(ctx, cublasGemmStridedBatchedEx(handle, op_b, op_a, n, m, k, alpha, g.b, type,
                                                   static_cast<int>(ldb), g.stride_b, g.a, type,
                                                   static_cast<int>(lda), g.stride_a, beta_ptr, g.c, type,
                                                   static_cast<int>(ldc), g.stride_c,
                                                   static_cast<int>(g.batch), compute, CUBLAS_GEMM_DEFAULT));
    }
    return 0;
}

// C[m, n] = A[m, k] · B[k, n], all packed row-major of `dtype`.
inline int matmul(const Context& ctx, DType dtype, long long m, long long n, long long k, const void* a,
                  const void* b, void* c) {
    Gemm g;
    g.dtype = dtype;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = a;
    g.b = b;
    g.c = c;
    return gemm(ctx, g);
}

// PyTorch's F.linear: y[rows, out] = x[rows, in] · W[out, in]ᵀ (+ bias[out] when not null).
inline int linear(const Context& ctx, DType dtype, long long rows, long long in, long long out, const void* x,
                  const void* w, const void* bias, void* y) {
    Gemm g;
    g.dtype = dtype;
    g.m = rows;
    g.n = out;
    g.k = in;
    g.a = x;
    g.b = w;
    g.trans_b = true;
    g.bias = bias;
    g.c = y;
    return gemm(ctx, g);
}

} // namespace pkbw::tk
