// PyTorch's F.linear-with-bias GEMM on cuBLASLt for references (pkbw reference toolkit; used by gemm.cuh).
//
// Why: a GEMM's fp32 sums depend on the kernel cuBLAS picks, and its heuristic picks from how it is
// called (API, descriptors, epilogue, workspace limit, pointer alignments). For a bit-identical result
// the toolkit calls cuBLAS as PyTorch 2.11 does (aten/src/ATen/native/cuda/Blas.cpp addmm_out_cuda_impl,
// aten/src/ATen/cuda/CUDABlas.cpp gemm_and_bias, CublasHandlePool.cpp):
//   - F.linear(x, W, b) on 2-D tensors is addmm(b, x, Wᵀ) with beta = 1; with a contiguous 1-D bias, a
//     contiguous result, every size > 1 and a float dtype, torch runs cublasLtMatmul with
//     CUBLASLT_EPILOGUE_BIAS (D = alpha·op(A)·op(B) + bias, beta 0) on the cuBLAS handle cast to an Lt
//     handle, compute CUBLAS_COMPUTE_32F (64F for f64) and scale type CUDA_R_32F (64F), the first
//     algorithm of cublasLtMatmulAlgoGetHeuristic under a preference of: the workspace limit (the cuBLAS
//     workspace, unified), the minimum alignments of A, B, C and the bias (_getAlignment: the largest
//     power of two up to 256 dividing the address), and no reduction-scheme mask (the default
//     allow_bf16/fp16_reduced_precision_reduction = True sets none).
//   - If the heuristic returns nothing or the call fails, torch copies the bias into the result and
//     runs the plain GEMM with beta = 1 (gemm.cuh's fallback).
// The workspace: torch's cuBLAS workspace is 32 MiB on compute capability 9.x, 10.x and 12.x, else
// 4096·1024·2 + 16·1024·8 bytes (parseChosenWorkspaceSize without CUBLAS_WORKSPACE_CONFIG), and cuBLASLt
// shares it (TORCH_CUBLASLT_UNIFIED_WORKSPACE defaults to on outside fbcode).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"

#include <cstdint>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <memory>

namespace pkbw::tk::gemm_lt {

// PyTorch's cuBLAS (and unified cuBLASLt) workspace size for the current device.
inline std::size_t torch_workspace_bytes() {
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
        major = 0;
    const bool use32mb = major == 9 || major == 10 || major == 12;
    return use32mb ? std::size_t{4096} * 8 * 1024 : std::size_t{4096} * 1024 * 2 + std::size_t{16} * 1024 * 8;
}

// One workspace per loaded library (each rank is its own process and the toolkit uses one stream),
// allocated on first use and never freed, like the handle (gemm.cuh). bytes == 0 when cudaMalloc failed.
struct Workspace {
    void* ptr = nullptr;
    std::size_t bytes = 0;
};
inline const Workspace& workspace() {
    static const Workspace made = [] {
        Workspace w;
        w.bytes = torch_workspace_bytes();
        if (cudaMalloc(&w.ptr, w.bytes) != cudaSuccess)
            w = {};
        return w;
    }();
    return made;
}

// CUDABlas.cpp's _getAlignment: the largest power of two <= 256 that divides the address.
inline std::uint32_t alignment_of(const void* pointer) {
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    std::uint32_t alignment = 256;
    while (address % alignment != 0)
        alignment /= 2;
    return alignment;
}

struct DescDeleter {
    void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
    void operator()(cublasLtMatrixLayoutOpaque_t* d) const { cublasLtMatrixLayoutDestroy(d); }
    void operator()(cublasLtMatmulPreferenceOpaque_t* d) const { cublasLtMatmulPreferenceDestroy(d); }
};
using MatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDeleter>;
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, DescDeleter>;

// CuBlasLtMatrixLayout(type, rows, cols, ld, t): the stored matrix is (t ? cols : rows) × (t ? rows : cols).
inline cublasStatus_t make_layout(Layout& out, cudaDataType_t type, std::uint64_t rows, std::uint64_t cols,
                                  std::int64_t ld, bool transposed) {
    cublasLtMatrixLayout_t raw = nullptr;
    const cublasStatus_t status =
        cublasLtMatrixLayoutCreate(&raw, type, transposed ? cols : rows, transposed ? rows : cols, ld);
    out.reset(raw);
    return status;
}

// The column-major problem torch hands cuBLASLt: D[m, n] = op(A)[m, k] · op(B)[k, n] + bias[m].
struct LtProblem {
    cudaDataType_t type = CUDA_R_32F;
    bool f64 = false;
    bool trans_a = false, trans_b = false;
    long long m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
    const void* a = nullptr;
    const void* b = nullptr;
    const void* bias = nullptr;
    void* d = nullptr;
    double alpha = 1.0;
};

// Builds the descriptors and the preference as gemm_and_bias does; CUBLAS_STATUS_SUCCESS or the first error.
inline cublasStatus_t describe(const LtProblem& p, MatmulDesc& desc, Layout& a, Layout& b, Layout& d,
                               Preference& pref) {
    cublasStatus_t s;
    cublasLtMatmulDesc_t raw_desc = nullptr;
    if ((s = cublasLtMatmulDescCreate(&raw_desc, p.f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F,
                                      p.f64 ? CUDA_R_64F : CUDA_R_32F)) != CUBLAS_STATUS_SUCCESS)
        return s;
    desc.reset(raw_desc);
    const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                            op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const void* bias = p.bias;
    if ((s = cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a)) ||
        (s = cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b)) ||
        (s = cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                            sizeof epilogue)) ||
        (s = cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias)))
        return s;
    if ((s = make_layout(a, p.type, p.m, p.k, p.lda, p.trans_a)) ||
        (s = make_layout(b, p.type, p.k, p.n, p.ldb, p.trans_b)) ||
        (s = make_layout(d, p.type, p.m, p.n, p.ldd, false)))
        return s;
    cublasLtMatmulPreference_t raw_pref = nullptr;
    if ((s = cublasLtMatmulPreferenceCreate(&raw_pref)) != CUBLAS_STATUS_SUCCESS)
        return s;
    pref.reset(raw_pref);
    const std::size_t bytes = workspace().bytes;
    const std::uint32_t align[4] = {alignment_of(p.a), alignment_of(p.b), alignment_of(p.d),
                                    alignment_of(p.bias)};
    const cublasLtMatmulPreferenceAttributes_t which[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    if ((s = cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes,
                                                  sizeof bytes)))
        return s;
    for (int i = 0; i < 4; ++i)
        if ((s = cublasLtMatmulPreferenceSetAttribute(raw_pref, which[i], &align[i], sizeof align[i])))
            return s;
    return CUBLAS_STATUS_SUCCESS;
}

// Runs p as torch's gemm_and_bias on `handle` (a cuBLAS handle, which cuBLAS documents as usable as an Lt
// handle) and `stream`. True when it ran; false where torch would fall back to copy-the-bias + GEMM
// (no heuristic result, or the call failed), as torch does after its warning.
inline bool linear_with_bias(cublasHandle_t handle, cudaStream_t stream, const LtProblem& p) {
    const Workspace& ws = workspace();
    if (ws.bytes == 0)
        return false;
    MatmulDesc desc;
    Layout a, b, d;
    Preference pref;
    if (describe(p, desc, a, b, d, pref) != CUBLAS_STATUS_SUCCESS)
        return false;
    const auto lt = reinterpret_cast<cublasLtHandle_t>(handle);
    cublasLtMatmulHeuristicResult_t heuristic = {};
    int returned = 0;
    if (cublasLtMatmulAlgoGetHeuristic(lt, desc.get(), a.get(), b.get(), d.get(), d.get(), pref.get(), 1,
                                       &heuristic, &returned) != CUBLAS_STATUS_SUCCESS ||
        returned == 0)
        return false;
    const float alpha32 = static_cast<float>(p.alpha), beta32 = 0.f;
    const double beta64 = 0.0;
    const void* alpha = p.f64 ? static_cast<const void*>(&p.alpha) : &alpha32;
    const void* beta = p.f64 ? static_cast<const void*>(&beta64) : &beta32;
    return cublasLtMatmul(lt, desc.get(), alpha, p.a, a.get(), p.b, b.get(), beta, p.d, d.get(), p.d, d.get(),
                          &heuristic.algo, ws.ptr, ws.bytes, stream) == CUBLAS_STATUS_SUCCESS;
}

} // namespace pkbw::tk::gemm_lt
