// Hand-written sample candidate (not LLM output)
// PKB 32 (fused MoE forward with rank-8 LoRA: router softmax + top-2, tokens to their experts' ranks,
// one SiLU-GLU MLP with LoRA per rank, weighted combine), baseline, bf16, no all-to-all: every rank
// copies its tokens into a symmetric buffer and routes them (one block per token: 8 warps for the 8
// router logits, then softmax and top-2 with the lower expert at a tie) into a symmetric choice
// array. After a host barrier, one block per (peer, token, choice) serves the choices routed to this
// rank's experts: it reads the peer's token through its pointer, runs this rank's MLP (one thread per
// intermediate unit, every torch op rounded to bf16) and writes the result row into the peer's
// symmetric result slot. After a second barrier each rank combines its two result rows per token
// with their weights; a third barrier keeps the next call off buffers a peer may still read.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

constexpr int kExperts = 8;
constexpr int kTopK = 2;
constexpr int kInter = 128; // PKB's intermediate width: one thread per unit in serve()
constexpr int kRank = 8;    // LoRA rank

__device__ float bf(float v) {
    return __bfloat162float(__float2bfloat16(v));
}
__device__ float ld(const __nv_bfloat16* p, long long i) {
    return __bfloat162float(p[i]);
}

// One block of 8 warps per token: warp e forms logit e, thread 0 picks the top-2.
__global__ void route(const __nv_bfloat16* x, const __nv_bfloat16* wr, const __nv_bfloat16* br, long long n,
                      int* chosen, float* weight) {
    __shared__ float logits[kExperts];
    const long long t = blockIdx.x;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float acc = 0.f;
    for (long long j = lane; j < n; j += 32)
        acc += ld(x, t * n + j) * ld(wr, warp * n + j);
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0)
        logits[warp] = bf(acc + ld(br, warp));
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    float top = logits[0], p[kExperts], sum = 0.f;
    for (int e = 1; e < kExperts; ++e)
        top = fmaxf(top, logits[e]);
    for (int e = 0; e < kExperts; ++e) {
        p[e] = expf(logits[e] - top);
        sum += p[e];
    }
    int a = -1, b = -1; // strict '>' keeps the lower expert at a tie
    for (int e = 0; e < kExperts; ++e) {
        p[e] = bf(p[e] / sum);
        if (a < 0 || p[e] > p[a]) {
            b = a;
            a = e;
        } else if (b < 0 || p[e] > p[b]) {
            b = e;
        }
    }
    chosen[t * kTopK] = a;
    chosen[t * kTopK + 1] = b;
    weight[t * kTopK] = p[a];
    weight[t * kTopK + 1] = p[b];
}

struct Mlp {
    const __nv_bfloat16 *wg, *bg, *wu, *bu, *wd, *bd;    // nn.Linear weights and biases
    const __nv_bfloat16 *ag, *bgl, *au, *bul, *ad, *bdl; // LoRA A [8, in], B [out, 8]
};

// Block (peer, token, choice): when the choice is one of this rank's experts, the MLP of this rank on
// the peer's token, written into the peer's result slot. Dynamic shared memory: the token as float.
__global__ void serve(void* const* tokens, void* const* chosen, void* const* results, int rank,
                      int experts_per_rank, long long m, long long n, Mlp w) {
    extern __shared__ float row[];
    __shared__ float xa_g[kRank], xa_u[kRank], xa_d[kRank], h[kInter];
    const long long slots = m * kTopK;
    const int peer = static_cast<int>(blockIdx.x / slots);
    const long long slot = blockIdx.x % slots;
    if (static_cast<const int*>(chosen[peer])[slot] / experts_per_rank != rank)
        return;
    const __nv_bfloat16* x = static_cast<const __nv_bfloat16*>(tokens[peer]) + (slot / kTopK) * n;
    const int i = threadIdx.x;
    for (long long j = i; j < n; j += kInter)
        row[j] = ld(x, j);
    __syncthreads();
    if (i < kRank) {
        float g = 0.f, u = 0.f;
        for (long long j = 0; j < n; ++j) {
            g += ld(w.ag, i * n + j) * row[j];
            u += ld(w.au, i * n + j) * row[j];
        }
        xa_g[i] = bf(g);
        xa_u[i] = bf(u);
    }
    __syncthreads();
    float g = ld(w.bg, i), u = ld(w.bu, i);
    for (long long j = 0; j < n; ++j) {
        g += ld(w.wg, i * n + j) * row[j];
        u += ld(w.wu, i * n + j) * row[j];
    }
    float lg = 0.f, lu = 0.f;
    for (int r = 0; r < kRank; ++r) {
        lg += ld(w.bgl, i * kRank + r) * xa_g[r];
        lu += ld(w.bul, i * kRank + r) * xa_u[r];
    }
    g = bf(bf(g) + bf(lg));
    u = bf(bf(u) + bf(lu));
    h[i] = bf(bf(g / (1.f + expf(-g))) * u);
    __syncthreads();
    if (i < kRank) {
        float d = 0.f;
        for (int q = 0; q < kInter; ++q)
            d += ld(w.ad, i * kInter + q) * h[q];
        xa_d[i] = bf(d);
    }
    __syncthreads();
    __nv_bfloat16* out = static_cast<__nv_bfloat16*>(results[peer]) + slot * n;
    for (long long j = i; j < n; j += kInter) {
        float y = ld(w.bd, j), l = 0.f;
        for (int q = 0; q < kInter; ++q)
            y += ld(w.wd, j * kInter + q) * h[q];
        for (int r = 0; r < kRank; ++r)
            l += ld(w.bdl, j * kRank + r) * xa_d[r];
        out[j] = __float2bfloat16(bf(y) + bf(l));
    }
}

// out[t] = bf(w0 * y0) + bf(w1 * y1), rounded: PKB's weighted rows scatter-added into zeros in bf16.
__global__ void combine(const __nv_bfloat16* results, const float* weight, long long m, long long n,
                        __nv_bfloat16* out) {
    for (long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; idx < m * n;
         idx += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long t = idx / n, j = idx % n;
        const float a = bf(weight[t * kTopK] * ld(results, (t * kTopK) * n + j));
        const float b = bf(weight[t * kTopK + 1] * ld(results, (t * kTopK + 1) * n + j));
        out[idx] = __float2bfloat16(a + b);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    if (ctx.num_inputs != 15 || x.dtype != pkbw::DType::BF16 || ctx.input(3).shape[0] != kInter ||
        ctx.input(9).shape[0] != kRank || ctx.param("num_experts", 8) != kExperts ||
        ctx.param("top_k", 2) != kTopK || kExperts % ctx.world_size != 0) {
        return ctx.fail(
            "this sample handles bf16 problem 32: 8 experts, top-2, inter 128, LoRA rank 8, W | 8");
    }
    const long long m = x.shape[0], n = x.shape[1];
    auto in = [&](int i) { return ctx.input(i).as<__nv_bfloat16>(); };
    const pkbw::SymmetricMemory tokens = ctx.symmetric("moe32_b_tokens", m * n * sizeof(__nv_bfloat16));
    const pkbw::SymmetricMemory chosen = ctx.symmetric("moe32_b_chosen", m * kTopK * sizeof(int));
    const pkbw::SymmetricMemory results =
        ctx.symmetric("moe32_b_results", m * kTopK * n * sizeof(__nv_bfloat16));
    float* weight = static_cast<float*>(ctx.scratch("moe32_b_weight", m * kTopK * sizeof(float)));
    cudaMemcpyAsync(tokens.local, x.data, m * n * sizeof(__nv_bfloat16), cudaMemcpyDeviceToDevice,
                    ctx.stream());
    route<<<static_cast<unsigned>(m), 32 * kExperts, 0, ctx.stream()>>>(
        in(0), in(1), in(2), n, static_cast<int*>(chosen.local), weight);
    ctx.barrier();
    const Mlp w{in(3), in(4), in(5), in(6), in(7), in(8), in(9), in(10), in(11), in(12), in(13), in(14)};
    const size_t shared = static_cast<size_t>(n) * sizeof(float);
    if (shared > 48 * 1024) {
        cudaFuncSetAttribute(serve, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    }
    serve<<<static_cast<unsigned>(ctx.world_size * m * kTopK), kInter, shared, ctx.stream()>>>(
        tokens.peers_device, chosen.peers_device, results.peers_device, ctx.rank, kExperts / ctx.world_size,
        m, n, w);
    ctx.barrier();
    combine<<<264, 256, 0, ctx.stream()>>>(static_cast<const __nv_bfloat16*>(results.local), weight, m, n,
                                           ctx.output(0).as<__nv_bfloat16>());
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
