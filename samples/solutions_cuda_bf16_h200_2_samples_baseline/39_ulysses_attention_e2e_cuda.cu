// Hand-written sample candidate (not LLM output)
// PKB 39 (Ulysses attention: qkv = hidden w_qkv^T as 8 heads of 64; this rank takes heads
// rank*8/W.. of every rank's tokens; PKB's attention runs over the HEAD axis, softmax(q k^T / 8)
// between one token's local heads, each op rounded to bf16 as eager PyTorch; the results go back to
// the token's owner, concatenated along the heads and multiplied by w_o^T), baseline, bf16: cuBLAS
// writes qkv into a symmetric buffer; after a host barrier one thread block per (source rank, token)
// attends over this rank's heads reading the source's qkv in place and writes into a second symmetric
// buffer; after another barrier a kernel gathers this rank's tokens from every peer and cuBLAS
// projects them.
#include "pkbw/solution.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;

struct Peers {
    const bf16* p[64];
};

cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t created = nullptr;
        cublasCreate(&created);
        return created;
    }();
    return h;
}

// Row-major y[m, n] = x[m, k] w[n, k]^T, bf16 with fp32 accumulation.
cublasStatus_t linear(cudaStream_t s, const bf16* x, const bf16* w, bf16* y, int m, int n, int k) {
    const float one = 1.f, zero = 0.f;
    cublasSetStream(handle(), s);
    return cublasGemmEx(handle(), CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, CUDA_R_16BF, k, x, CUDA_R_16BF,
                        k, &zero, y, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

__device__ float r16(float v) {
    return __bfloat162float(__float2bfloat16(v));
}

// Block = (source rank, token); thread (i, d) of lh x 64: query head i, output column d.
__global__ void head_attention(Peers qkv, bf16* attn, int rows, int width, int lh, int me) {
    __shared__ float p[8][8];
    const int src = blockIdx.x / rows, r = blockIdx.x % rows;
    const bf16* t = qkv.p[src] + static_cast<long long>(r) * 3 * width + me * lh * 64;
    const int i = threadIdx.x / 64, d = threadIdx.x % 64;
    if (d < lh) { // score of query head i with key head d
        float s = 0.f;
        for (int e = 0; e < 64; ++e)
            s += __bfloat162float(t[i * 64 + e]) * __bfloat162float(t[width + d * 64 + e]);
        p[i][d] = r16(r16(s) * 0.125f);
    }
    __syncthreads();
    if (d == 0) {
        float m = -INFINITY, sum = 0.f;
        for (int j = 0; j < lh; ++j)
            m = fmaxf(m, p[i][j]);
        for (int j = 0; j < lh; ++j)
            sum += __expf(p[i][j] - m);
        for (int j = 0; j < lh; ++j)
            p[i][j] = r16(__expf(p[i][j] - m) / sum);
    }
    __syncthreads();
    float acc = 0.f;
    for (int j = 0; j < lh; ++j)
        acc += p[i][j] * __bfloat162float(t[2 * width + j * 64 + d]);
    attn[(static_cast<long long>(src) * rows + r) * lh * 64 + i * 64 + d] = __float2bfloat16(acc);
}

// context[r][src * piece + x] = peer src's result for this rank's token r.
__global__ void gather_tokens(Peers results, bf16* context, int rows, int piece, int world, int me) {
    const long long total = static_cast<long long>(rows) * world * piece;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const int x = static_cast<int>(e % piece), src = static_cast<int>((e / piece) % world);
        const long long r = e / (static_cast<long long>(piece) * world);
        context[e] = results.p[src][(static_cast<long long>(me) * rows + r) * piece + x];
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& hidden = ctx.input(0);
    const int world = ctx.world_size;
    const int rows = static_cast<int>(hidden.shape[0] * hidden.shape[1]),
              width = static_cast<int>(hidden.shape[2]);
    const int lh = 8 / world, piece = lh * 64;
    if (hidden.dtype != pkbw::DType::BF16 || width != 512 || ctx.param("num_heads", 8) != 8)
        return ctx.fail("this sample handles bf16 with 8 heads of 64");
    const pkbw::SymmetricMemory qkv =
        ctx.symmetric("ulysses39_qkv", static_cast<size_t>(rows) * 3 * width * sizeof(bf16));
    const pkbw::SymmetricMemory res =
        ctx.symmetric("ulysses39_attn", static_cast<size_t>(world) * rows * piece * sizeof(bf16));
    bf16* context = static_cast<bf16*>(
        ctx.scratch("ulysses39_context", static_cast<size_t>(rows) * width * sizeof(bf16)));
    if (linear(ctx.stream(), hidden.as<bf16>(), ctx.input(1).as<bf16>(), static_cast<bf16*>(qkv.local), rows,
               3 * width, width) != CUBLAS_STATUS_SUCCESS)
        return ctx.fail("cublasGemmEx (qkv) failed");
    ctx.barrier();
    Peers sources{}, results{};
    for (int r = 0; r < world; ++r) {
        sources.p[r] = static_cast<const bf16*>(qkv.peers[r]);
        results.p[r] = static_cast<const bf16*>(res.peers[r]);
    }
    head_attention<<<world * rows, lh * 64, 0, ctx.stream()>>>(sources, static_cast<bf16*>(res.local), rows,
                                                               width, lh, ctx.rank);
    ctx.barrier();
    gather_tokens<<<256, 256, 0, ctx.stream()>>>(results, context, rows, piece, world, ctx.rank);
    if (linear(ctx.stream(), context, ctx.input(2).as<bf16>(), ctx.output(0).as<bf16>(), rows, width,
               width) != CUBLAS_STATUS_SUCCESS)
        return ctx.fail("cublasGemmEx (w_o) failed");
    ctx.barrier(); // peers may still read this rank's buffers
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
