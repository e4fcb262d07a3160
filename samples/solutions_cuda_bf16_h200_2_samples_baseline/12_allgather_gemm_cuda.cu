// Hand-written sample candidate (not LLM output)
// PKB 12 (all-gather A along K, GEMM with the local B), baseline: publish A_local in a symmetric
// buffer, host barrier, one kernel assembles A [M, K] from the peers' shards, cuBLAS multiplies.
#include "pkbw/solution.h"

#include <cublas_v2.h>

namespace {

// a[row][r * kl + j] = peer r's shard[row][j], read through peer pointers (2-byte elements).
__global__ void assemble(void* const* peers, unsigned short* a, long long m, long long kl, int world) {
    const long long total = m * kl * world;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long row = i / (kl * world);
        const long long col = i % (kl * world);
        const int r = static_cast<int>(col / kl);
        a[i] = static_cast<const unsigned short*>(peers[r])[row * kl + col % kl];
    }
}

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
    if (a_local.dtype != pkbw::DType::BF16) {
        return ctx.fail("allgather-gemm baseline: bf16 only");
    }
    const long long m = a_local.shape[0], kl = a_local.shape[1], k = b.shape[0], n = b.shape[1];
    const pkbw::SymmetricMemory sym = ctx.symmetric("ag_gemm_baseline", a_local.nbytes());
    auto* a = static_cast<unsigned short*>(ctx.scratch("ag_gemm_a", a_local.nbytes() * ctx.world_size));
    cudaMemcpyAsync(sym.local, a_local.data, a_local.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    assemble<<<1024, 256, 0, ctx.stream()>>>(sym.peers_device, a, m, kl, ctx.world_size);
    const float alpha = 1.f, beta = 0.f;
    cublasSetStream(handle(), ctx.stream());
    const cublasStatus_t st = cublasGemmEx(
        handle(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
        &alpha, b.data, CUDA_R_16BF, static_cast<int>(n), a, CUDA_R_16BF, static_cast<int>(k), &beta,
        ctx.output(0).data, CUDA_R_16BF, static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    ctx.barrier(); // the shards stay readable until every rank has assembled A
    if (st != CUBLAS_STATUS_SUCCESS) {
        return ctx.fail(cublasGetStatusString(st));
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
