// Hand-written sample candidate (not LLM output)
// PKB 13 (GEMM, then all-reduce), baseline: cuBLAS writes the local product straight into a
// symmetric buffer; after a host barrier one kernel sums the peers' products.
#include "pkbw/solution.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>

namespace {

__global__ void sum_peers(void* const* peers, int world, __nv_bfloat16* out, long long count) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        float s = 0.f;
        for (int r = 0; r < world; ++r)
            s += __bfloat162float(static_cast<const __nv_bfloat16*>(peers[r])[i]);
        out[i] = __float2bfloat16(s);
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
    const pkbw::TensorView& a = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    if (a.dtype != pkbw::DType::BF16) {
        return ctx.fail("gemm-allreduce baseline: bf16 only");
    }
    const long long m = a.shape[0], k = a.shape[1], n = b.shape[1];
    const pkbw::SymmetricMemory sym = ctx.symmetric("gemm_ar_baseline", out.nbytes());
    const float alpha = 1.f, beta = 0.f;
    cublasSetStream(handle(), ctx.stream());
    const cublasStatus_t st = cublasGemmEx(
        handle(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
        &alpha, b.data, CUDA_R_16BF, static_cast<int>(n), a.data, CUDA_R_16BF, static_cast<int>(k), &beta,
        sym.local, CUDA_R_16BF, static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    ctx.barrier();
    sum_peers<<<1024, 256, 0, ctx.stream()>>>(sym.peers_device, ctx.world_size, out.as<__nv_bfloat16>(),
                                              out.numel());
    ctx.barrier();
    if (st != CUBLAS_STATUS_SUCCESS) {
        return ctx.fail(cublasGetStatusString(st));
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
