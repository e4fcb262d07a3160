// Hand-written sample candidate (not LLM output)
// PKB 24 (MoE load-balancing loss: softmax over the experts, top-2 per token, token fractions times
// mean router probabilities, times E, averaged over ranks), baseline: one thread per token computes
// the fp32 softmax (rounded to bf16), picks the top-2 (lower index at a tie) and adds its counts and
// probabilities into per-block shared sums, flushed to a global array with atomics; one thread forms
// the local loss in this rank's slot of a symmetric array; after a host barrier a last kernel adds the
// W slots in rank order and divides by W, and a second barrier keeps the next call off the slots.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 256;
constexpr int kExperts = 8;

__global__ void route(const __nv_bfloat16* logits, long long tokens, float* sums) {
    __shared__ float counts[kExperts], probs_sum[kExperts];
    if (threadIdx.x < kExperts) {
        counts[threadIdx.x] = 0.f;
        probs_sum[threadIdx.x] = 0.f;
    }
    __syncthreads();
    const long long t = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
    if (t < tokens) {
        float p[kExperts];
        float row_max = -INFINITY;
        for (int e = 0; e < kExperts; ++e) {
            p[e] = __bfloat162float(logits[t * kExperts + e]);
            row_max = fmaxf(row_max, p[e]);
        }
        float sum = 0.f;
        for (int e = 0; e < kExperts; ++e) {
            p[e] = expf(p[e] - row_max);
            sum += p[e];
        }
        int a = -1, b = -1;
        for (int e = 0; e < kExperts; ++e) {
            p[e] = __bfloat162float(__float2bfloat16(p[e] / sum));
            atomicAdd(&probs_sum[e], p[e]);
            if (a < 0 || p[e] > p[a]) {
                b = a;
                a = e;
            } else if (b < 0 || p[e] > p[b]) {
                b = e;
            }
        }
        atomicAdd(&counts[a], 1.f);
        atomicAdd(&counts[b], 1.f);
    }
    __syncthreads();
    if (threadIdx.x < kExperts) {
        atomicAdd(&sums[threadIdx.x], counts[threadIdx.x]);
        atomicAdd(&sums[kExperts + threadIdx.x], probs_sum[threadIdx.x]);
    }
}

__global__ void local_loss(const float* sums, long long tokens, float* slot) {
    const float m = static_cast<float>(tokens);
    float loss = 0.f;
    for (int e = 0; e < kExperts; ++e) {
        const float mean = __bfloat162float(__float2bfloat16(sums[kExperts + e] / m));
        loss += sums[e] / m * mean;
    }
    *slot = loss * kExperts;
}

__global__ void average(void* const* slots, int world, float* out) {
    float total = 0.f;
    for (int r = 0; r < world; ++r)
        total += *static_cast<const volatile float*>(slots[r]);
    *out = total / static_cast<float>(world);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& logits = ctx.input(0);
    if (logits.dtype != pkbw::DType::BF16 || logits.ndim != 2 || logits.shape[1] != kExperts ||
        ctx.param("top_k", 2) != 2) {
        return ctx.fail("this sample handles bf16 gate_logits [M, 8] with top_k = 2");
    }
    const long long tokens = logits.shape[0];
    float* sums = static_cast<float*>(ctx.scratch("lbl24_sums", 2 * kExperts * sizeof(float)));
    const pkbw::SymmetricMemory slots = ctx.symmetric("lbl24_baseline", sizeof(float));
    cudaMemsetAsync(sums, 0, 2 * kExperts * sizeof(float), ctx.stream());
    const unsigned blocks = static_cast<unsigned>((tokens + kThreads - 1) / kThreads);
    route<<<blocks, kThreads, 0, ctx.stream()>>>(logits.as<__nv_bfloat16>(), tokens, sums);
    local_loss<<<1, 1, 0, ctx.stream()>>>(sums, tokens, static_cast<float*>(slots.local));
    ctx.barrier();
    average<<<1, 1, 0, ctx.stream()>>>(slots.peers_device, ctx.world_size, ctx.output(0).as<float>());
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
