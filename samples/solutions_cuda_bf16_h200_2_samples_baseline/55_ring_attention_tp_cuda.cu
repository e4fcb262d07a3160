// Hand-written sample candidate (not LLM output)
// PKB 55 (attention block on a TP x CP grid, tp = param tp_size: TP pairs are consecutive ranks, CP
// groups ranks tp apart; qkv = hidden w_qkv^T on 8/tp heads of 64, causal attention over the CP
// group's sequence blocks, y = context w_o^T summed over the TP group), baseline, bf16: cuBLAS writes
// qkv into a symmetric buffer; after a host barrier one thread block per query row reads the keys and
// values of CP peers 0..cp_rank in place (one fp32 softmax over the causal range); cuBLAS writes the
// partial projection into a second symmetric buffer, and after another barrier a kernel sums the TP
// peers' partials.
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

__device__ float reduce(float v, float* red, bool is_max) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] = is_max ? fmaxf(red[threadIdx.x], red[threadIdx.x + s])
                                      : red[threadIdx.x] + red[threadIdx.x + s];
        __syncthreads();
    }
    const float r = red[0];
    __syncthreads();
    return r;
}

// Block = (token row, head h). qkv rows are [q | k | v] of `width` each; peers[c] = CP peer c's qkv.
__global__ void attend(Peers peers, const bf16* qkv, bf16* context, int s_n, int h_n, int width, int last,
                       int me, int causal) {
    extern __shared__ float smem[];
    __shared__ float red[128];
    float* qrow = smem;
    float* p = smem + 64;
    const int h = blockIdx.x % h_n;
    const long long row = blockIdx.x / h_n; // b * S + i
    const int i = static_cast<int>(row % s_n);
    const long long b = row / s_n;
    const long long token = 3LL * width;
    for (int d = threadIdx.x; d < 64; d += blockDim.x)
        qrow[d] = __bfloat162float(qkv[row * token + h * 64 + d]);
    __syncthreads();
    const int keys = (last + 1) * s_n;
    float m = -INFINITY;
    for (int g = threadIdx.x; g < keys; g += blockDim.x) {
        const int c = g / s_n, j = g % s_n;
        const bf16* k = peers.p[c] + (b * s_n + j) * token + width + h * 64;
        float s = 0.f;
        for (int d = 0; d < 64; ++d)
            s += qrow[d] * __bfloat162float(k[d]);
        p[g] = (causal && c == me && j > i) ? -INFINITY : s * 0.125f;
        m = fmaxf(m, p[g]);
    }
    m = reduce(m, red, true);
    float sum = 0.f;
    for (int g = threadIdx.x; g < keys; g += blockDim.x) {
        p[g] = __expf(p[g] - m);
        sum += p[g];
    }
    sum = reduce(sum, red, false);
    for (int d = threadIdx.x; d < 64; d += blockDim.x) {
        float acc = 0.f;
        for (int g = 0; g < keys; ++g) {
            const int c = g / s_n, j = g % s_n;
            acc += p[g] * __bfloat162float(peers.p[c][(b * s_n + j) * token + 2 * width + h * 64 + d]);
        }
        context[row * width + h * 64 + d] = __float2bfloat16(acc / sum);
    }
}

__global__ void sum_peers(Peers parts, int count, bf16* y, long long n) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n;
         e += (long long)gridDim.x * blockDim.x) {
        float s = 0.f;
        for (int t = 0; t < count; ++t)
            s += __bfloat162float(parts.p[t][e]);
        y[e] = __float2bfloat16(s);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& hidden = ctx.input(0);
    if (hidden.dtype != pkbw::DType::BF16)
        return ctx.fail("this sample handles bf16");
    const int tp = static_cast<int>(ctx.param("tp_size", 1));
    const int tp_rank = ctx.rank % tp, cp_rank = ctx.rank / tp, cp = ctx.world_size / tp;
    const int s_n = static_cast<int>(hidden.shape[1]), hid = static_cast<int>(hidden.shape[2]);
    const int rows = static_cast<int>(hidden.shape[0]) * s_n, width = static_cast<int>(ctx.input(2).shape[1]);
    const bool causal = ctx.param("causal", 1) != 0;
    const int last = causal ? cp_rank : cp - 1;

    const pkbw::SymmetricMemory qkv =
        ctx.symmetric("ring55_qkv", static_cast<size_t>(rows) * 3 * width * sizeof(bf16));
    const pkbw::SymmetricMemory part =
        ctx.symmetric("ring55_part", static_cast<size_t>(rows) * hid * sizeof(bf16));
    bf16* context =
        static_cast<bf16*>(ctx.scratch("ring55_context", static_cast<size_t>(rows) * width * sizeof(bf16)));
    if (linear(ctx.stream(), hidden.as<bf16>(), ctx.input(1).as<bf16>(), static_cast<bf16*>(qkv.local), rows,
               3 * width, hid) != CUBLAS_STATUS_SUCCESS)
        return ctx.fail("cublasGemmEx (qkv) failed");
    ctx.barrier();
    Peers peers{};
    for (int c = 0; c < cp; ++c)
        peers.p[c] = static_cast<const bf16*>(qkv.peers[c * tp + tp_rank]);
    const int h_n = width / 64;
    const size_t smem = (64 + static_cast<size_t>(last + 1) * s_n) * sizeof(float);
    attend<<<rows * h_n, 128, smem, ctx.stream()>>>(peers, static_cast<const bf16*>(qkv.local), context, s_n,
                                                    h_n, width, last, cp_rank, causal ? 1 : 0);
    if (linear(ctx.stream(), context, ctx.input(2).as<bf16>(), static_cast<bf16*>(part.local), rows, hid,
               width) != CUBLAS_STATUS_SUCCESS)
        return ctx.fail("cublasGemmEx (w_o) failed");
    ctx.barrier();
    Peers parts{};
    for (int t = 0; t < tp; ++t)
        parts.p[t] = static_cast<const bf16*>(part.peers[cp_rank * tp + t]);
    sum_peers<<<256, 256, 0, ctx.stream()>>>(parts, tp, ctx.output(0).as<bf16>(),
                                             static_cast<long long>(rows) * hid);
    ctx.barrier(); // peers may still read this rank's buffers
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
