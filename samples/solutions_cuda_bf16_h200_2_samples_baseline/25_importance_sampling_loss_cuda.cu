// Hand-written sample candidate (not LLM output)
// PKB 25 (importance-sampling policy-gradient loss over a 32000-word vocabulary, means over every
// rank's valid tokens), baseline, bf16: a shared-memory tiled GEMM writes the logits in bf16, one
// block per row takes its log-sum-exp and the per-token values, one block reduces the seven local
// values into this rank's slot of a symmetric fp32 array, and after a host barrier one thread
// combines the W slots into the loss and the metrics.
#include "pkbw/solution.h"

#include <cstdint>
#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;
constexpr int kTile = 16;
constexpr int kThreads = 256;
constexpr int kSlots = 8; // valid, pg, ratio, min, max, k3, entropy, surrogate

// logits[m, v] = h[m, k] . w[v, k]
__global__ void logits_gemm(const bf16* h, const bf16* w, bf16* logits, int m, int vocab, int k) {
    __shared__ float hs[kTile][kTile + 1], ws[kTile][kTile + 1];
    const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
    const int wrow = blockIdx.x * kTile + threadIdx.y;
    float acc = 0.f;
    for (int t = 0; t < k; t += kTile) {
        const int kk = t + threadIdx.x;
        hs[threadIdx.y][threadIdx.x] = row < m && kk < k ? __bfloat162float(h[(long long)row * k + kk]) : 0.f;
        ws[threadIdx.y][threadIdx.x] =
            wrow < vocab && kk < k ? __bfloat162float(w[(long long)wrow * k + kk]) : 0.f;
        __syncthreads();
        for (int q = 0; q < kTile; ++q)
            acc += hs[threadIdx.y][q] * ws[threadIdx.x][q];
        __syncthreads();
    }
    if (row < m && col < vocab)
        logits[(long long)row * vocab + col] = __float2bfloat16(acc);
}

__device__ float block_sum(float v, float* part) {
    part[threadIdx.x] = v;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    const float r = part[0];
    __syncthreads();
    return r;
}

__device__ float block_max(float v, float* part) {
    part[threadIdx.x] = v;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + s]);
        __syncthreads();
    }
    const float r = part[0];
    __syncthreads();
    return r;
}

// One block per token: ce, new logprob, ratio, per-token loss; token_vals[i] = its 8 contributions.
__global__ void per_token(const bf16* logits, int vocab, const int64_t* labels, const bf16* old_lp,
                          const bf16* adv, long long ignore, bf16* logprobs, bf16* pg_out,
                          float* token_vals) {
    __shared__ float part[kThreads];
    const long long i = blockIdx.x;
    const bf16* row = logits + i * vocab;
    float mx = -INFINITY;
    for (int v = threadIdx.x; v < vocab; v += kThreads)
        mx = fmaxf(mx, __bfloat162float(row[v]));
    mx = block_max(mx, part);
    float s = 0.f;
    for (int v = threadIdx.x; v < vocab; v += kThreads)
        s += __expf(__bfloat162float(row[v]) - mx);
    s = block_sum(s, part);
    if (threadIdx.x != 0)
        return;
    const bool valid = labels[i] != ignore;
    const float ce = valid ? mx + logf(s) - __bfloat162float(row[labels[i]]) : 0.f;
    logprobs[i] = __float2bfloat16(-ce);
    const float delta = valid ? fminf(fmaxf(-ce - __bfloat162float(old_lp[i]), -20.f), 20.f) : 0.f;
    const float ratio = expf(delta);
    const float ra = ratio * __bfloat162float(adv[i]);
    pg_out[i] = __float2bfloat16(valid ? -ra : 0.f);
    float* out = token_vals + i * kSlots;
    out[0] = valid ? 1.f : 0.f;
    out[1] = valid ? -ra : 0.f;
    out[2] = valid ? ratio : 0.f;
    out[3] = valid ? ratio : INFINITY;
    out[4] = valid ? ratio : -INFINITY;
    out[5] = valid ? ratio - delta - 1.f : 0.f;
    out[6] = ce;
    out[7] = valid ? ra * ce : 0.f;
}

__global__ void local_reduce(const float* token_vals, long long m, float* slot) {
    __shared__ float part[kThreads];
    for (int k = 0; k < kSlots; ++k) {
        float acc = k == 3 ? INFINITY : (k == 4 ? -INFINITY : 0.f);
        for (long long i = threadIdx.x; i < m; i += kThreads) {
            const float v = token_vals[i * kSlots + k];
            acc = k == 3 ? fminf(acc, v) : (k == 4 ? fmaxf(acc, v) : acc + v);
        }
        const float r =
            k == 3 ? -block_max(-acc, part) : (k == 4 ? block_max(acc, part) : block_sum(acc, part));
        if (threadIdx.x == 0)
            slot[k] = r;
    }
}

__global__ void combine(void* const* slots, int world, const float* own, float* loss, float* metrics) {
    float g[7] = {0, 0, 0, INFINITY, -INFINITY, 0, 0};
    for (int r = 0; r < world; ++r) {
        const volatile float* p = static_cast<const volatile float*>(slots[r]);
        g[0] += p[0];
        g[1] += p[1];
        g[2] += p[2];
        g[3] = fminf(g[3], p[3]);
        g[4] = fmaxf(g[4], p[4]);
        g[5] += p[5];
        g[6] += p[6];
    }
    const float count = fmaxf(g[0], 1.f);
    const float true_pg = g[1] / count, surrogate = own[7] / count;
    *loss = (true_pg + surrogate) - surrogate;
    metrics[0] = g[2] / count;
    metrics[1] = g[3];
    metrics[2] = g[4];
    metrics[3] = g[5] / count;
    metrics[4] = g[6] / count;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::BF16) {
        return ctx.fail("this sample handles bf16");
    }
    const long long m = ctx.input(0).shape[0], n = ctx.input(0).shape[1], vocab = ctx.input(1).shape[0];
    cudaStream_t s = ctx.stream();
    bf16* logits = static_cast<bf16*>(ctx.scratch("is25_logits", m * vocab * sizeof(bf16)));
    float* token_vals = static_cast<float*>(ctx.scratch("is25_tokens", m * kSlots * sizeof(float)));
    const pkbw::SymmetricMemory slots = ctx.symmetric("is25_slots", kSlots * sizeof(float));

    logits_gemm<<<dim3((vocab + kTile - 1) / kTile, (m + kTile - 1) / kTile), dim3(kTile, kTile), 0, s>>>(
        ctx.input(0).as<bf16>(), ctx.input(1).as<bf16>(), logits, (int)m, (int)vocab, (int)n);
    per_token<<<m, kThreads, 0, s>>>(logits, (int)vocab, ctx.input(2).as<int64_t>(), ctx.input(3).as<bf16>(),
                                     ctx.input(4).as<bf16>(), (long long)ctx.param("ignore_index", -100),
                                     ctx.output(1).as<bf16>(), ctx.output(2).as<bf16>(), token_vals);
    local_reduce<<<1, kThreads, 0, s>>>(token_vals, m, static_cast<float*>(slots.local));
    ctx.barrier();
    combine<<<1, 1, 0, s>>>(slots.peers_device, ctx.world_size, static_cast<const float*>(slots.local),
                            ctx.output(0).as<float>(), ctx.output(3).as<float>());
    ctx.barrier(); // peers may still read this rank's slot
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
