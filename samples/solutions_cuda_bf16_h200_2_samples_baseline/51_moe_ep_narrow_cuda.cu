// Hand-written sample candidate (not LLM output)
// PKB 51 (31 with E < W, EP groups of E consecutive ranks; fused MoE forward: router linear + softmax + top-k
// in bf16, tokens to their experts' ranks, one SiLU-GLU MLP per rank, weighted combine), baseline, bf16. No
// all-to-all: every rank publishes its tokens and routing in symmetric buffers; after a host barrier each
// rank runs one block per (peer, token, choice) of its EP group, and the blocks whose choice is one of this
// rank's experts compute the MLP row (fp32 sums, torch's bf16 roundings) into the owner's result slot; after
// another barrier every rank sums its slots times their weights. Reads params num_experts, top_k and ep_size
// (EP groups of ep_size consecutive ranks; the world by default), so it serves 49, 50 and 51 too.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;
constexpr int kThreads = 128;
constexpr int kMaxExperts = 256;

__device__ float round_bf16(float v) {
    return __bfloat162float(__float2bfloat16(v));
}

// One block per token: logits (bf16), softmax (bf16), top-k (ties: lower expert index).
__global__ void route(const bf16* x, const bf16* wr, const bf16* br, int n, int experts, int k, int* choice,
                      bf16* weight) {
    __shared__ float partial[kThreads];
    __shared__ float probs[kMaxExperts];
    const long long t = blockIdx.x;
    for (int e = 0; e < experts; ++e) {
        float acc = 0.f;
        for (int j = threadIdx.x; j < n; j += kThreads)
            acc += __bfloat162float(x[t * n + j]) * __bfloat162float(wr[(long long)e * n + j]);
        partial[threadIdx.x] = acc;
        __syncthreads();
        for (int s = kThreads / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s)
                partial[threadIdx.x] += partial[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0)
            probs[e] = round_bf16(partial[0] + __bfloat162float(br[e]));
        __syncthreads();
    }
    if (threadIdx.x != 0)
        return;
    float top = -INFINITY, sum = 0.f;
    for (int e = 0; e < experts; ++e)
        top = fmaxf(top, probs[e]);
    for (int e = 0; e < experts; ++e)
        sum += expf(probs[e] - top);
    for (int e = 0; e < experts; ++e)
        probs[e] = round_bf16(expf(probs[e] - top) / sum);
    for (int s = 0; s < k; ++s) {
        int best = -1;
        for (int e = 0; e < experts; ++e) {
            bool taken = false;
            for (int q = 0; q < s; ++q)
                taken = taken || choice[t * k + q] == e;
            if (!taken && (best < 0 || probs[e] > probs[best]))
                best = e;
        }
        choice[t * k + s] = best;
        weight[t * k + s] = __float2bfloat16(probs[best]);
    }
}

struct Peers {
    const bf16* tokens[64];
    const int* choices[64];
    bf16* results[64];
};

struct Mlp {
    const bf16 *wg, *bg, *wu, *bu, *wd, *bd;
};

// One block per (peer, token, choice); only choices of this rank's experts do work.
__global__ void serve(Peers peers, Mlp mlp, long long m, int n, int inter, int k, int local, int me) {
    extern __shared__ float h[]; // [inter]
    const long long id = blockIdx.x;
    const int p = static_cast<int>(id / (m * k));
    const long long slot = id % (m * k), t = slot / k;
    if (peers.choices[p][slot] / local != me)
        return;
    const bf16* row = peers.tokens[p] + t * n;
    for (int i = threadIdx.x; i < inter; i += blockDim.x) {
        float g = 0.f, u = 0.f;
        for (int j = 0; j < n; ++j) {
            const float xv = __bfloat162float(row[j]);
            g += xv * __bfloat162float(mlp.wg[(long long)i * n + j]);
            u += xv * __bfloat162float(mlp.wu[(long long)i * n + j]);
        }
        g = round_bf16(g + __bfloat162float(mlp.bg[i]));
        u = round_bf16(u + __bfloat162float(mlp.bu[i]));
        h[i] = round_bf16(round_bf16(g / (1.f + expf(-g))) * u);
    }
    __syncthreads();
    bf16* dst = peers.results[p] + slot * n;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        float y = 0.f;
        for (int i = 0; i < inter; ++i)
            y += h[i] * __bfloat162float(mlp.wd[(long long)j * inter + i]);
        dst[j] = __float2bfloat16(y + __bfloat162float(mlp.bd[j]));
    }
}

// out[t] = sum over choices (ascending expert) of bf16(w * y), each add rounded to bf16.
__global__ void combine(const bf16* results, const bf16* weight, const int* choice, long long m, int n, int k,
                        bf16* out) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < m * n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long t = i / n, j = i % n;
        float acc = 0.f;
        int last = -1;
        for (int q = 0; q < k; ++q) {
            int pick = -1; // the next choice in ascending expert order
            for (int s = 0; s < k; ++s) {
                const int e = choice[t * k + s];
                if (e > last && (pick < 0 || e < choice[t * k + pick]))
                    pick = s;
            }
            last = choice[t * k + pick];
            const float w = __bfloat162float(weight[t * k + pick]);
            acc = round_bf16(acc + round_bf16(w * __bfloat162float(results[(t * k + pick) * n + j])));
        }
        out[i] = __float2bfloat16(acc);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::BF16 || ctx.world_size > 64) {
        return ctx.fail("this sample handles bf16 and up to 64 ranks");
    }
    const long long m = ctx.input(0).shape[0];
    const int n = static_cast<int>(ctx.input(0).shape[1]), inter = static_cast<int>(ctx.input(3).shape[0]);
    const int experts = static_cast<int>(ctx.param("num_experts", 8));
    const int k = static_cast<int>(ctx.param("top_k", 2));
    const int ep = static_cast<int>(ctx.param("ep_size", ctx.world_size));
    if (k < 1 || k > experts || experts > kMaxExperts || ep < 1 || experts % ep != 0 ||
        ctx.world_size % ep != 0) {
        return ctx.fail("unsupported num_experts / top_k / ep_size");
    }
    const int local = experts / ep, base = ctx.rank / ep * ep, me = ctx.rank % ep;
    cudaStream_t s = ctx.stream();

    const pkbw::SymmetricMemory tokens = ctx.symmetric("moe51_tokens", m * n * sizeof(bf16));
    const pkbw::SymmetricMemory choices = ctx.symmetric("moe51_choices", m * k * sizeof(int));
    const pkbw::SymmetricMemory results = ctx.symmetric("moe51_results", m * k * n * sizeof(bf16));
    bf16* weight = static_cast<bf16*>(ctx.scratch("moe51_weight", m * k * sizeof(bf16)));
    cudaMemcpyAsync(tokens.local, ctx.input(0).data, m * n * sizeof(bf16), cudaMemcpyDeviceToDevice, s);
    route<<<static_cast<unsigned>(m), kThreads, 0, s>>>(ctx.input(0).as<bf16>(), ctx.input(1).as<bf16>(),
                                                        ctx.input(2).as<bf16>(), n, experts, k,
                                                        static_cast<int*>(choices.local), weight);
    ctx.barrier();

    Peers peers{};
    for (int p = 0; p < ep; ++p) {
        peers.tokens[p] = static_cast<const bf16*>(tokens.peers[base + p]);
        peers.choices[p] = static_cast<const int*>(choices.peers[base + p]);
        peers.results[p] = static_cast<bf16*>(results.peers[base + p]);
    }
    const Mlp mlp{ctx.input(3).as<bf16>(), ctx.input(4).as<bf16>(), ctx.input(5).as<bf16>(),
                  ctx.input(6).as<bf16>(), ctx.input(7).as<bf16>(), ctx.input(8).as<bf16>()};
    serve<<<static_cast<unsigned>(ep * m * k), kThreads, inter * sizeof(float), s>>>(peers, mlp, m, n, inter,
                                                                                     k, local, me);
    ctx.barrier();

    combine<<<264, 256, 0, s>>>(static_cast<const bf16*>(results.local), weight,
                                static_cast<const int*>(choices.local), m, n, k, ctx.output(0).as<bf16>());
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
