// Reference for PKB problem 16: cuBLAS GEMM of the K shard into a dtype-D scratch [M, N], then
// ncclReduceScatter (sum) of its row blocks.
#include "pkbw/solution.h"

#include <cublas_v2.h>

namespace {

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

// One handle per process (each rank is its own process). Deliberately never destroyed: destroying
// it from a static destructor can run after the CUDA context is gone.
cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t created = nullptr;
        cublasCreate(&created);
        return created;
    }();
    return h;
}

// Row-major C[m, n] = A[m, k] · B[k, n] with fp32 accumulation; as column-major that is
// Cᵀ = Bᵀ·Aᵀ, so the operands are swapped and nothing is transposed.
cublasStatus_t gemm_rm(cudaStream_t stream, cudaDataType_t type, const void* a, const void* b, void* c,
                       long long m, long long n, long long k) {
    const float alpha = 1.f, beta = 0.f;
    cublasSetStream(handle(), stream);
    return cublasGemmEx(handle(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                        static_cast<int>(k), &alpha, b, type, static_cast<int>(n), a, type,
                        static_cast<int>(k), &beta, c, type, static_cast<int>(n), CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    cudaDataType_t type;
    if (!cuda_type(a.dtype, type) || pkbw::nccl_dtype(a.dtype) == ncclUint8) {
        return ctx.fail("16_gemm_reducescatter reference: dtype must be bf16, f16 or f32");
    }
    const long long m = a.shape[0], kl = a.shape[1], n = b.shape[1];
    void* partial = ctx.scratch("gemm_rs_partial", out.nbytes() * ctx.world_size);
    const cublasStatus_t st = gemm_rm(ctx.stream(), type, a.data, b.data, partial, m, n, kl);
    if (st != CUBLAS_STATUS_SUCCESS) {
        return ctx.fail(cublasGetStatusString(st));
    }
    const ncclResult_t rc = ncclReduceScatter(partial, out.data, static_cast<size_t>(out.numel()),
                                              pkbw::nccl_dtype(out.dtype), ncclSum, ctx.nccl(), ctx.stream());
    return rc == ncclSuccess ? 0 : ctx.fail(ncclGetErrorString(rc));
}
