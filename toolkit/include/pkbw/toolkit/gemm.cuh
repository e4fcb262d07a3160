// Row-major GEMMs on cuBLAS for references (pkbw reference toolkit).
//
//     pkbw::tk::Gemm g;                 // C[m, n] = op(A)[m, k] · op(B)[k, n] (+ bias[n])
//     g.dtype = x.dtype; g.m = rows; g.n = out; g.k = in;
//     g.a = x.data; g.b = w.data; g.trans_b = true; g.bias = b.data; g.c = y.data;   // F.linear
//     PKBW_TRY(pkbw::tk::gemm(ctx, g));
//
// Numerics: bf16/f16/f32 operands accumulate in fp32 (TF32 is never used, so f32 GEMMs are true fp32
// like torch with allow_tf32 = False), f64 operands in f64; C is rounded once to its dtype, a bias added
// to the fp32 accumulator before that rounding, as torch's addmm epilogue does.
//
// Fidelity (issue 29): the fp32 sums depend on the kernel cuBLAS picks, and its heuristic picks from how
// it is called, so every GEMM here calls cuBLAS the way PyTorch 2.11 does for the same op:
//   - with a bias (F.linear = addmm with beta 1): cuBLASLt with the bias epilogue (gemm_lt.cuh) when
//     torch would (batch 1, packed C, m, n, k > 1); otherwise torch's fallback, the bias copied into C
//     and the plain GEMM with beta = 1. That fallback was the toolkit's only path before, and on an H200
//     it behaved as r(r(x·Wᵀ) + b), the bias added after the product's rounding: CPU models reproduce
//     the mismatches of 32 and 40-47 from that alone (issue 29, docs/problems.md), so it is kept only
//     where torch takes it too;
//   - without (mm, bmm): bf16/f16 cublasGemmEx / cublasGemmStridedBatchedEx with the legacy compute type
//     CUDA_R_32F and CUBLAS_GEMM_DEFAULT_TENSOR_OP under CUBLAS_DEFAULT_MATH; f32
//     cublasSgemm(StridedBatched); f64 cublasDgemm(StridedBatched) (CUDABlas.cpp gemm_internal_cublas*,
//     bgemm_internal_cublas*);
//   - the handle gets torch's workspace (32 MiB on an H100/H200) after every cublasSetStream, which
//     resets it to cuBLAS's own pool.
// torch's default allow_bf16/fp16_reduced_precision_reduction = True leaves the reduced-precision
// split-K reductions allowed (no CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, no Lt reduction mask),
// and so does the toolkit: that flag narrows the set the heuristic chooses from. The 2026-12 H200 run
// showed torch's kernels for these shapes do not use such reductions (the cross-check with
// PKBXC_CUBLAS_REDUCED_PRECISION=off changed nothing).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gemm_lt.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cublas_v2.h>

namespace pkbw::tk {

// The library's cuBLAS handle, created on first use in torch's math mode for these dtypes
// (CUBLAS_DEFAULT_MATH: no TF32, reduced-precision reductions allowed), set to the caller's stream and
// torch's workspace on every call. One per loaded library (each rank is its own process); never
// destroyed, since a static destructor may run after the CUDA context is gone.
inline cublasHandle_t cublas_handle() {
    static cublasHandle_t handle = [] {
        cublasHandle_t created = nullptr;
        if (cublasCreate(&created) == CUBLAS_STATUS_SUCCESS)
            cublasSetMathMode(created, CUBLAS_DEFAULT_MATH);
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
    // Split-K partial sums reduced in fp32 only (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION). Off for
    // torch's matmul and F.linear, which allow bf16/f16 reductions; on where the GEMM stands for a cuDNN
    // convolution (conv_im2col), whose reductions are fp32: with K = channels x taps of 10^4 and more, a
    // reduction in bf16 moves outputs by several ulps.
    bool exact_reductions = false;
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

// The column-major call cuBLAS sees for row-major C = op(A)·op(B): Cᵀ = op(B)ᵀ·op(A)ᵀ, so B enters first,
// and a row-major operand stored untransposed is, read column-major, already the transpose cuBLAS needs.
struct ColumnMajor {
    cublasOperation_t op_first, op_second;
    int m, n, k;
    long long ld_first, ld_second, ldc;
};
inline ColumnMajor column_major(const Gemm& g) {
    const long long lda = g.lda ? g.lda : (g.trans_a ? g.m : g.k);
    const long long ldb = g.ldb ? g.ldb : (g.trans_b ? g.k : g.n);
    const long long ldc = g.ldc ? g.ldc : g.n;
    return {g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
            g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
            static_cast<int>(g.n),
            static_cast<int>(g.m),
            static_cast<int>(g.k),
            ldb,
            lda,
            ldc};
}

// torch's addmm Lt path for F.linear with a bias (Blas.cpp isInputCompliesAddmmCudaLt): true when it ran.
inline bool linear_with_bias_lt(const Context& ctx, cublasHandle_t handle, const Gemm& g,
                                cudaDataType_t type) {
    const ColumnMajor c = column_major(g);
    const bool packed_c = c.ldc == g.n;
    if (!g.bias || g.batch != 1 || !packed_c || g.m < 2 || g.n < 2 || g.k < 2)
        return false;
    gemm_lt::LtProblem p;
    p.type = type;
    p.f64 = g.dtype == DType::F64;
    p.trans_a = c.op_first == CUBLAS_OP_T;
    p.trans_b = c.op_second == CUBLAS_OP_T;
    p.m = c.m;
    p.n = c.n;
    p.k = c.k;
    p.lda = c.ld_first;
    p.ldb = c.ld_second;
    p.ldd = c.ldc;
    p.a = g.b;
    p.b = g.a;
    p.bias = g.bias;
    p.d = g.c;
    p.alpha = g.alpha;
    return gemm_lt::linear_with_bias(handle, ctx.stream(), p);
}

// The plain GEMM, one call per dtype as CUDABlas.cpp's gemm/bgemm_internal_cublas* make it.
inline cublasStatus_t plain_gemm(cublasHandle_t h, const Gemm& g, cudaDataType_t type, double beta) {
    const ColumnMajor c = column_major(g);
    const int lda = static_cast<int>(c.ld_first), ldb = static_cast<int>(c.ld_second),
              ldc = static_cast<int>(c.ldc), batch = static_cast<int>(g.batch);
    if (g.dtype == DType::F64) {
        const auto* a = static_cast<const double*>(g.b);
        const auto* b = static_cast<const double*>(g.a);
        auto* out = static_cast<double*>(g.c);
        return g.batch == 1 ? cublasDgemm(h, c.op_first, c.op_second, c.m, c.n, c.k, &g.alpha, a, lda, b, ldb,
                                          &beta, out, ldc)
                            : cublasDgemmStridedBatched(h, c.op_first, c.op_second, c.m, c.n, c.k, &g.alpha,
                                                        a, lda, g.stride_b, b, ldb, g.stride_a, &beta, out,
                                                        ldc, g.stride_c, batch);
    }
    const float alpha32 = static_cast<float>(g.alpha), beta32 = static_cast<float>(beta);
    if (g.dtype == DType::F32) {
        const auto* a = static_cast<const float*>(g.b);
        const auto* b = static_cast<const float*>(g.a);
        auto* out = static_cast<float*>(g.c);
        return g.batch == 1 ? cublasSgemm(h, c.op_first, c.op_second, c.m, c.n, c.k, &alpha32, a, lda, b, ldb,
                                          &beta32, out, ldc)
                            : cublasSgemmStridedBatched(h, c.op_first, c.op_second, c.m, c.n, c.k, &alpha32,
                                                        a, lda, g.stride_b, b, ldb, g.stride_a, &beta32, out,
                                                        ldc, g.stride_c, batch);
    }
    // bf16/f16: the legacy compute type CUDA_R_32F (cuBLAS migrates it to CUBLAS_COMPUTE_32F), as torch
    // passes.
    const cudaDataType compute = CUDA_R_32F;
    if (g.batch == 1)
        return cublasGemmEx(h, c.op_first, c.op_second, c.m, c.n, c.k, &alpha32, g.b, type, lda, g.a, type,
                            ldb, &beta32, g.c, type, ldc, compute, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
    return cublasGemmStridedBatchedEx(h, c.op_first, c.op_second, c.m, c.n, c.k, &alpha32, g.b, type, lda,
                                      g.stride_b, g.a, type, ldb, g.stride_a, &beta32, g.c, type, ldc,
                                      g.stride_c, batch, compute, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
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
    const cublasHandle_t handle = cublas_handle();
    if (!handle)
        return ctx.fail("pkbw::tk::gemm: cublasCreate failed");
    PKBW_CHECK(ctx, cublasSetStream(handle, ctx.stream()));
    const gemm_lt::Workspace& ws = gemm_lt::workspace();
    if (ws.bytes == 0)
        return ctx.fail("pkbw::tk::gemm: could not allocate the cuBLAS workspace");
    PKBW_CHECK(ctx, cublasSetWorkspace(handle, ws.ptr, ws.bytes));
    PKBW_CHECK(ctx, cublasSetMathMode(handle, g.exact_reductions
                                                  ? static_cast<cublasMath_t>(
                                                        CUBLAS_DEFAULT_MATH |
                                                        CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
                                                  : CUBLAS_DEFAULT_MATH));
    if (!g.exact_reductions && detail::linear_with_bias_lt(ctx, handle, g, type))
        return 0;
    double beta = g.beta;
    if (g.bias) { // torch's fallback: the bias copied into C, then the GEMM with beta = 1
        PKBW_TRY(detail::fill_bias(ctx, g, detail::column_major(g).ldc));
        beta = 1.0;
    }
    PKBW_CHECK(ctx, detail::plain_gemm(handle, g, type, beta));
    return 0;
}

// C[m, n] = alpha · A[m, k] · B[k, n] + beta · C, all packed row-major of `dtype`: torch.addmm(C, A, B,
// beta=beta, alpha=alpha) written over C (the caller copies C's input there first).
inline int addmm(const Context& ctx, DType dtype, long long m, long long n, long long k, const void* a,
                 const void* b, double alpha, double beta, void* c) {
    Gemm g;
    g.dtype = dtype;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = a;
    g.b = b;
    g.c = c;
    g.alpha = alpha;
    g.beta = beta;
    return gemm(ctx, g);
}

// C[m, n] = A[m, k] · B[k, n], all packed row-major of `dtype`.
inline int matmul(const Context& ctx, DType dtype, long long m, long long n, long long k, const void* a,
                  const void* b, void* c) {
    return addmm(ctx, dtype, m, n, k, a, b, 1.0, 0.0, c);
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
