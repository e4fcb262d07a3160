// Reference for PKB problem 12: ncclAllGather of the A shards into [W, M, K/W], a permute into
// A [M, K] (concatenation along K), then one cuBLAS GEMM with fp32 accumulation.
#include "pkbw/solution.h"

#include <cublas_v2.h>

namespace {

// buf[r][m][j] -> a[m][r * kl + j], one element per thread, as raw 2- or 4-byte words.
template <class Word>
__global__ void concat_k(const Word* buf, Word* a, long long m, long long kl, int world) {
    const long long total = m * kl * world;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long r = i / (m * kl);
        const long long row = (i / kl) % m;
        const long long j = i % kl;
        a[row * kl * world + r * kl + j] = buf[i];
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

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a_local = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& c = ctx.output(0);
    cudaDataType_t type;
    if (!cuda_type(a_local.dtype, type)) {
        return ctx.fail("12_allgather_gemm reference: dtype must be bf16, f16 or f32");
    }
    const long long m = a_local.shape[0], kl = a_local.shape[1], k = b.shape[0], n = b.shape[1];
    const std::size_t shard = a_local.nbytes();
    void* gathered = ctx.scratch("ag_gemm_gathered", shard * ctx.world_size);
    void* a_full = ctx.scratch("ag_gemm_a", shard * ctx.world_size);
    ncclResult_t nrc = ncclAllGather(a_local.data, gathered, shard, ncclUint8, ctx.nccl(), ctx.stream());
    if (nrc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(nrc));
    }
    const int threads = 256;
    const long long blocks = (m * k + threads - 1) / threads;
    const int grid = static_cast<int>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
    if (pkbw::element_size(a_local.dtype) == 2) {
        concat_k<<<grid, threads, 0, ctx.stream()>>>(static_cast<const unsigned short*>(gathered),
                                                     static_cast<unsigned short*>(a_full), m, kl,
                                                     ctx.world_size);
    } else {
        concat_k<<<grid, threads, 0, ctx.stream()>>>(static_cast<const unsigned*>(gathered),
                                                     static_cast<unsigned*>(a_full), m, kl, ctx.world_size);
    }
    // Row-major C = A B is column-major C^T = B^T A^T: swap the operands, no transposes.
    const float alpha = 1.f, beta = 0.f;
    cublasSetStream(handle(), ctx.stream());
    const cublasStatus_t st = cublasGemmEx(
        handle(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
        &alpha, b.data, type, static_cast<int>(n), a_full, type, static_cast<int>(k), &beta, c.data, type,
        static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
        return ctx.fail(cublasGetStatusString(st));
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
