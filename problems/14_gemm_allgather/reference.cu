// Reference for PKB problem 14: cuBLAS GEMM of the column shard, ncclAllGather into [W, M, N/W],
// then a permute into [M, N] (concatenation along columns).
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

// buf[r][row][j] -> out[row][r * cols + j]
template <class Word>
__global__ void concat_columns(const Word* buf, Word* out, long long rows, long long cols, int world) {
    const long long total = rows * cols * world;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long r = i / (rows * cols);
        const long long row = (i / cols) % rows;
        const long long j = i % cols;
        out[row * cols * world + r * cols + j] = buf[i];
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    cudaDataType_t type;
    if (!cuda_type(a.dtype, type)) {
        return ctx.fail("14_gemm_allgather reference: dtype must be bf16, f16 or f32");
    }
    const long long m = a.shape[0], k = a.shape[1], nl = b.shape[1];
    const std::size_t local_bytes = static_cast<std::size_t>(m * nl) * pkbw::element_size(out.dtype);
    void* product = ctx.scratch("gemm_ag_product", local_bytes);
    void* gathered = ctx.scratch("gemm_ag_gathered", local_bytes * ctx.world_size);
    const cublasStatus_t st = gemm_rm(ctx.stream(), type, a.data, b.data, product, m, nl, k);
    if (st != CUBLAS_STATUS_SUCCESS) {
        return ctx.fail(cublasGetStatusString(st));
    }
    const ncclResult_t rc =
        ncclAllGather(product, gathered, local_bytes, ncclUint8, ctx.nccl(), ctx.stream());
    if (rc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc));
    }
    const long long total = m * nl * ctx.world_size;
    const int grid = static_cast<int>(total / 256 + 1 < 4096 ? total / 256 + 1 : 4096);
    if (pkbw::element_size(out.dtype) == 2) {
        concat_columns<<<grid, 256, 0, ctx.stream()>>>(static_cast<const unsigned short*>(gathered),
                                                       static_cast<unsigned short*>(out.data), m, nl,
                                                       ctx.world_size);
    } else {
        concat_columns<<<grid, 256, 0, ctx.stream()>>>(
            static_cast<const unsigned*>(gathered), static_cast<unsigned*>(out.data), m, nl, ctx.world_size);
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
