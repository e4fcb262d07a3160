// Reference for PKB problem 11: transpose the shard to [K/W, M], ncclAllGather into A^T [K, M] (the
// rank-ordered stack of transposed shards is exactly A^T), then one cuBLAS GEMM C = (A^T)^T B.
#include "pkbw/solution.h"

#include <cublas_v2.h>

namespace {

template <class Word>
__global__ void transpose(const Word* a, Word* at, long long m, long long kl) {
    const long long total = m * kl;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long j = i / m;   // row of A^T (column of A)
        const long long row = i % m; // column of A^T (row of A)
        at[i] = a[row * kl + j];
    }
}

bool cuda_type(pkbw::DType dtype, cudaDataType_t& type) {
    switch (dtype) {
    case pkbw::DType::BF16:
        type = CUDA_R_16BF;
        return true;
    case pkbw::DType::F16:
        type = CUDA_R_16F;
        return true;
    case pkbw::DType::F32:
        type = CUDA_R_32F;
        return true;
    default:
        return false;
    }
}

// One handle per process, deliberately never destroyed (a static destructor may run after the CUDA
// context is gone).
cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t created = nullptr;
        cublasCreate(&created);
        return created;
    }();
    return h;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a_local = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& c = ctx.output(0);
    cudaDataType_t type;
    if (!cuda_type(a_local.dtype, type)) {
        return ctx.fail("11_allgather_gemm_AT reference: dtype must be bf16, f16 or f32");
    }
    const long long m = a_local.shape[0], kl = a_local.shape[1], k = b.shape[0], n = b.shape[1];
    const std::size_t shard = a_local.nbytes();
    void* at_local = ctx.scratch("ag_gemm_at_local", shard);
    void* at = ctx.scratch("ag_gemm_at", shard * ctx.world_size);
    const int grid = static_cast<int>(m * kl / 256 + 1 < 4096 ? m * kl / 256 + 1 : 4096);
    if (pkbw::element_size(a_local.dtype) == 2) {
        transpose<<<grid, 256, 0, ctx.stream()>>>(static_cast<const unsigned short*>(a_local.data),
                                                  static_cast<unsigned short*>(at_local), m, kl);
    } else {
        transpose<<<grid, 256, 0, ctx.stream()>>>(static_cast<const unsigned*>(a_local.data),
                                                  static_cast<unsigned*>(at_local), m, kl);
    }
    const ncclResult_t nrc = ncclAllGather(at_local, at, shard, ncclUint8, ctx.nccl(), ctx.stream());
    if (nrc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(nrc));
    }
    // Column-major: C^T [N, M] = B^T [N, K] (B as stored) x A [K, M]^T... A^T stored row-major [K, M]
    // is column-major A [M, K] with ld M, so it enters transposed.
    const float alpha = 1.f, beta = 0.f;
    cublasSetStream(handle(), ctx.stream());
    const cublasStatus_t st = cublasGemmEx(
        handle(), CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
        &alpha, b.data, type, static_cast<int>(n), at, type, static_cast<int>(m), &beta, c.data, type,
        static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
        return ctx.fail(cublasGetStatusString(st));
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
