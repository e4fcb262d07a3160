// Hand-written sample candidate (not LLM output)
// PKB 75 (Gated DeltaNet: q, k [1, L, H, 256], v [1, L, H, 512], gate, beta [1, L, H] bf16 per rank;
// rank r runs heads r*H/W.. over all W*L tokens in rank order: q, k L2-normalised (q / 16), decay =
// exp(-exp(a_log) softplus(gate + dt_bias)), fp32 state S [256, 512]: S = decay S, u = (v - k^T S)
// beta, S += k u^T, o = q^T S; o returns to the token's owner), baseline: the inputs are copied into
// a symmetric buffer, a host barrier, one thread block per (head, 32 value columns) keeps its state
// slice in shared memory and reads each token straight from its owner's buffer; results go to a
// second symmetric buffer and, after another barrier, a kernel copies this rank's tokens back.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;
constexpr int kDk = 256, kCols = 32; // state slice 256 x 32 fp32 = 32 KiB of shared memory

struct Peers {
    const bf16* p[64];
};
struct Layout {
    long long seq, heads, dv, lh, tokens;
    long long off_k, off_v, off_gate, off_beta; // element offsets in a rank's buffer (q at 0)
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

// Block (head h, column block); 256 threads: thread i owns key row i of the state slice.
__global__ void recurrence(Peers in, Layout L, const bf16* a_log, const bf16* dt_bias, int me,
                           bf16* results) {
    __shared__ float red[kDk];
    __shared__ float u[kCols];
    extern __shared__ float state[]; // [kDk][kCols]
    const int h = blockIdx.x, col0 = blockIdx.y * kCols, i = threadIdx.x;
    const long long g = me * L.lh + h;
    const float a = expf(__bfloat162float(a_log[h])), bias = __bfloat162float(dt_bias[h]);
    for (int c = 0; c < kCols; ++c)
        state[i * kCols + c] = 0.f;
    for (long long t = 0; t < L.tokens; ++t) {
        const bf16* src = in.p[t / L.seq];
        const long long at = (t % L.seq) * L.heads + g;
        const float qv = __bfloat162float(src[at * kDk + i]);
        const float kv = __bfloat162float(src[L.off_k + at * kDk + i]);
        const float qn = qv / fmaxf(sqrtf(block_sum(qv * qv, red)), 1e-6f) / 16.f;
        const float kn = kv / fmaxf(sqrtf(block_sum(kv * kv, red)), 1e-6f);
        const float x = __bfloat162float(src[L.off_gate + at]) + bias;
        const float decay = expf(-a * (x > 20.f ? x : log1pf(expf(x))));
        const float beta = __bfloat162float(src[L.off_beta + at]);
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
                results[(t * L.lh + h) * L.dv + col0 + c] = __float2bfloat16(o);
        }
    }
}

__global__ void collect(Peers res, Layout L, int world, int me, bf16* out) {
    const long long total = L.seq * L.heads * L.dv;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const long long d = e % L.dv, head = (e / L.dv) % L.heads, s = e / (L.dv * L.heads);
        const int p = static_cast<int>(head / L.lh);
        out[e] = res.p[p][((me * L.seq + s) * L.lh + head % L.lh) * L.dv + d];
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& q = ctx.input(0);
    if (q.dtype != pkbw::DType::BF16 || q.shape[3] != kDk || ctx.input(2).shape[3] % kCols != 0)
        return ctx.fail("this sample handles bf16 with key dim 256");
    const int world = ctx.world_size;
    Layout L{q.shape[1], q.shape[2], ctx.input(2).shape[3], q.shape[2] / world, world * q.shape[1], 0, 0,
             0,          0};
    L.off_k = q.numel();
    L.off_v = 2 * q.numel();
    L.off_gate = L.off_v + ctx.input(2).numel();
    L.off_beta = L.off_gate + ctx.input(3).numel();
    const long long total = L.off_beta + ctx.input(4).numel();
    const pkbw::SymmetricMemory in = ctx.symmetric("gdn75_inputs", total * sizeof(bf16));
    const pkbw::SymmetricMemory res = ctx.symmetric("gdn75_results", L.tokens * L.lh * L.dv * sizeof(bf16));
    const long long offs[5] = {0, L.off_k, L.off_v, L.off_gate, L.off_beta};
    for (int i = 0; i < 5; ++i)
        cudaMemcpyAsync(static_cast<bf16*>(in.local) + offs[i], ctx.input(i).data, ctx.input(i).nbytes(),
                        cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    Peers inputs{}, results{};
    for (int r = 0; r < world; ++r) {
        inputs.p[r] = static_cast<const bf16*>(in.peers[r]);
        results.p[r] = static_cast<const bf16*>(res.peers[r]);
    }
    const dim3 grid(static_cast<unsigned>(L.lh), static_cast<unsigned>(L.dv / kCols));
    recurrence<<<grid, kDk, kDk * kCols * sizeof(float), ctx.stream()>>>(
        inputs, L, ctx.input(5).as<bf16>(), ctx.input(6).as<bf16>(), ctx.rank, static_cast<bf16*>(res.local));
    ctx.barrier();
    collect<<<512, 256, 0, ctx.stream()>>>(results, L, world, ctx.rank, ctx.output(0).as<bf16>());
    ctx.barrier(); // peers may still read this rank's buffers
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
