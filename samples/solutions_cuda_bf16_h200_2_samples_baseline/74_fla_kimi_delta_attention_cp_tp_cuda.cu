// Hand-written sample candidate (not LLM output)
// PKB 74 (Kimi delta attention: tp = param tp_size; TP pairs of consecutive ranks, CP groups of ranks
// tp apart; every rank runs all 16 heads over the CP group's whole sequence in rank order: q, k
// L2-normalised (q / sqrt(128)), per-key-dim decay d = exp(-5 sigmoid(exp(a_log) (g + dt_bias))),
// S = diag(d) S, u = (v - k^T S) sigmoid(beta), S += k u^T, o = q^T S; o (bf16) summed over the TP
// pair, the rank's sequence slice returned), baseline: the inputs are copied into a symmetric buffer,
// a host barrier, one thread block per (head, 32 value columns) keeps its state slice in shared memory
// and reads each token from its CP peer's buffer; the full outputs go to a second symmetric buffer
// and, after another barrier, a kernel sums the TP pair's slices.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;
constexpr int kDk = 128, kCols = 32;

struct Peers {
    const bf16* p[64];
};
struct Layout {
    long long seq, heads, dv, tokens;
    long long off_k, off_v, off_g, off_beta;
};

__device__ float block_sum(float v, float* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float r = red[0];
    __syncthreads();
    return r;
}

// Block (head h, column block); kDk threads: thread i owns key row i of the state slice.
__global__ void recurrence(Peers cp_inputs, Layout L, const bf16* a_log, const bf16* dt_bias, bf16* out) {
    __shared__ float red[kDk];
    __shared__ float u[kCols];
    __shared__ float state[kDk * kCols];
    const int h = blockIdx.x, col0 = blockIdx.y * kCols, i = threadIdx.x;
    const float a = expf(__bfloat162float(a_log[h])), bias = __bfloat162float(dt_bias[h * kDk + i]);
    for (int c = 0; c < kCols; ++c)
        state[i * kCols + c] = 0.f;
    for (long long t = 0; t < L.tokens; ++t) {
        const bf16* src = cp_inputs.p[t / L.seq];
        const long long at = (t % L.seq) * L.heads + h;
        const float qv = __bfloat162float(src[at * kDk + i]);
        const float kv = __bfloat162float(src[L.off_k + at * kDk + i]);
        const float qn = qv / fmaxf(sqrtf(block_sum(qv * qv, red)), 1e-12f) * rsqrtf(static_cast<float>(kDk));
        const float kn = kv / fmaxf(sqrtf(block_sum(kv * kv, red)), 1e-12f);
        const float x = a * (__bfloat162float(src[L.off_g + at * kDk + i]) + bias);
        const float decay = expf(-5.f / (1.f + expf(-x)));
        const float beta = 1.f / (1.f + expf(-__bfloat162float(src[L.off_beta + at])));
        for (int c = 0; c < kCols; ++c) {
            state[i * kCols + c] *= decay;
            const float proj = block_sum(kn * state[i * kCols + c], red);
            if (i == 0)
                u[c] = (__bfloat162float(src[L.off_v + at * L.dv + col0 + c]) - proj) * beta;
        }
        __syncthreads();
        for (int c = 0; c < kCols; ++c) {
            state[i * kCols + c] += kn * u[c];
            const float o = block_sum(qn * state[i * kCols + c], red);
            if (i == 0)
                out[(t * L.heads + h) * L.dv + col0 + c] = __float2bfloat16(o);
        }
    }
}

__global__ void sum_slice(Peers outs, int tp, long long offset, long long count, bf16* y) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < count;
         e += (long long)gridDim.x * blockDim.x) {
        float s = 0.f;
        for (int t = 0; t < tp; ++t)
            s += __bfloat162float(outs.p[t][offset + e]);
        y[e] = __float2bfloat16(s);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& q = ctx.input(0);
    if (q.dtype != pkbw::DType::BF16 || q.shape[3] != kDk || ctx.input(2).shape[3] % kCols != 0)
        return ctx.fail("this sample handles bf16 with key dim 128");
    const int tp = static_cast<int>(ctx.param("tp_size", 1));
    const int cp = ctx.world_size / tp, cp_rank = ctx.rank / tp, tp_rank = ctx.rank % tp;
    Layout L{q.shape[1], q.shape[2], ctx.input(2).shape[3], cp * q.shape[1], 0, 0, 0, 0};
    L.off_k = q.numel();
    L.off_v = 2 * q.numel();
    L.off_g = L.off_v + ctx.input(2).numel();
    L.off_beta = L.off_g + ctx.input(3).numel();
    const long long total = L.off_beta + ctx.input(4).numel();
    const pkbw::SymmetricMemory in = ctx.symmetric("kda74_inputs", total * sizeof(bf16));
    const pkbw::SymmetricMemory res = ctx.symmetric("kda74_out", L.tokens * L.heads * L.dv * sizeof(bf16));
    const long long offs[5] = {0, L.off_k, L.off_v, L.off_g, L.off_beta};
    for (int i = 0; i < 5; ++i)
        cudaMemcpyAsync(static_cast<bf16*>(in.local) + offs[i], ctx.input(i).data, ctx.input(i).nbytes(),
                        cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    Peers inputs{}, outs{};
    for (int c = 0; c < cp; ++c)
        inputs.p[c] = static_cast<const bf16*>(in.peers[c * tp + tp_rank]);
    for (int t = 0; t < tp; ++t)
        outs.p[t] = static_cast<const bf16*>(res.peers[cp_rank * tp + t]);
    const dim3 grid(static_cast<unsigned>(L.heads), static_cast<unsigned>(L.dv / kCols));
    recurrence<<<grid, kDk, 0, ctx.stream()>>>(inputs, L, ctx.input(5).as<bf16>(), ctx.input(6).as<bf16>(),
                                               static_cast<bf16*>(res.local));
    ctx.barrier();
    const long long slice = L.seq * L.heads * L.dv;
    sum_slice<<<256, 256, 0, ctx.stream()>>>(outs, tp, cp_rank * slice, slice, ctx.output(0).as<bf16>());
    ctx.barrier(); // peers may still read this rank's buffers
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
