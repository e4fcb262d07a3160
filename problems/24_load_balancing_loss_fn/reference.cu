// Reference for PKB problem 24 (load-balancing loss): one block walks the tokens; per token an fp32
// softmax over the experts rounded to the dtype (torch's softmax in D), the top-k of those rounded
// probabilities by the toolkit's router rule (moe_router.h: lower expert index first at a tie),
// per-thread counts and probability sums, block reductions in a fixed order, and thread 0 forms
// E * sum_k,e f[k,e] * P[e] in fp32 (f = count / M in fp32, P = mean probability rounded to D, as
// torch's mean of a D tensor). ncclAllReduce of that fp32 scalar, then a division by W.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/moe_router.h"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

namespace tk = pkbw::tk;

constexpr int kThreads = 256;
constexpr int kMaxExperts = 64;
constexpr int kMaxTopK = 8;

template <class T>
__global__ void local_loss(const T* logits, long long tokens, int experts, int top_k, float* loss) {
    float counts[kMaxTopK][kMaxExperts];
    float prob_sums[kMaxExperts];
    for (int e = 0; e < experts; ++e) {
        prob_sums[e] = 0.f;
        for (int k = 0; k < top_k; ++k)
            counts[k][e] = 0.f;
    }
    float probs[kMaxExperts];
    int chosen[kMaxTopK];
    for (long long t = threadIdx.x; t < tokens; t += kThreads) {
        const T* row = logits + t * experts;
        float top = tk::to_float(row[0]);
        for (int e = 1; e < experts; ++e)
            top = fmaxf(top, tk::to_float(row[e]));
        float sum = 0.f;
        for (int e = 0; e < experts; ++e) {
            probs[e] = expf(tk::to_float(row[e]) - top);
            sum += probs[e];
        }
        for (int e = 0; e < experts; ++e) {
            probs[e] = tk::round_as<T>(probs[e] / sum);
            prob_sums[e] += probs[e];
        }
        tk::router_top_k(probs, experts, top_k, chosen);
        for (int k = 0; k < top_k; ++k)
            counts[k][chosen[k]] += 1.f;
    }
    // The fractions and means, in a fixed order; thread 0 accumulates the loss as torch's
    // sum(f * P.unsqueeze(0)) (fp32 products of fp32 and D values).
    const float m = static_cast<float>(tokens);
    float total = 0.f;
    for (int e = 0; e < experts; ++e) {
        const float mean_prob = tk::round_as<T>(tk::block_reduce<kThreads>(prob_sums[e], tk::SumOp{}) / m);
        for (int k = 0; k < top_k; ++k) {
            const float fraction = tk::block_reduce<kThreads>(counts[k][e], tk::SumOp{}) / m;
            total += fraction * mean_prob;
        }
    }
    if (threadIdx.x == 0)
        *loss = total * static_cast<float>(experts);
}

__global__ void divide_by(float* value, float divisor) {
    *value = *value / divisor;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& logits = ctx.input(0);
    const int experts = static_cast<int>(ctx.param("num_experts", 8));
    const int top_k = static_cast<int>(ctx.param("top_k", 2));
    if (logits.ndim != 2 || logits.shape[1] != experts || experts > kMaxExperts || top_k < 1 ||
        top_k > kMaxTopK || top_k > experts) {
        return ctx.fail("24 reference: gate_logits must be [M, num_experts] with num_experts <= 64 and "
                        "1 <= top_k <= min(8, num_experts)");
    }
    float* out = ctx.output(0).as<float>();
    PKBW_TRY(tk::dispatch_float(ctx, logits.dtype, "24 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        local_loss<T><<<1, kThreads, 0, ctx.stream()>>>(static_cast<const T*>(logits.data), logits.shape[0],
                                                        experts, top_k, out);
        return tk::finish(ctx);
    }));
    PKBW_CHECK(ctx, ncclAllReduce(out, out, 1, ncclFloat32, ncclSum, ctx.nccl(), ctx.stream()));
    divide_by<<<1, 1, 0, ctx.stream()>>>(out, static_cast<float>(ctx.world_size));
    return tk::finish(ctx);
}
