// The MoE router on the device for references (pkbw reference toolkit), PKB 31/32/49-51's
//
//     logits = F.linear(x, W, b)                         (cuBLAS, fp32 accumulation + bias, rounded to T)
//     routing_weights, selected = torch.topk(torch.softmax(logits, -1), k)
//     counts[e] = one_hot(selected, E).sum over tokens and k   (expert_mask.sum(dim=(1, 2)))
//
// The softmax is computed in fp32 per token (max, Σ exp(l − max) in the order of torch's kernel,
// exp(l − max) / Σ) and rounded to T, as torch's softmax on a T tensor; the top-k runs on those rounded
// values with moe_router.h's rule (ties: lower expert index). moe_router_host.h is the float64 oracle of the
// same steps.
//
//     pkbw::tk::RouterShape shape{tokens, hidden, experts, top_k};
//     PKBW_TRY(pkbw::tk::moe_router(ctx, dtype, shape, x, gate_w, gate_b, weights, selected, counts));
//
// Scratch: "pkbw_tk_moe_router_logits" (tokens × experts of T).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/moe_router.h"
#include "pkbw/toolkit/types.cuh"

namespace pkbw::tk {

struct RouterShape {
    long long tokens = 0; // rows of x
    long long hidden = 0; // columns of x and of the router weight [experts, hidden]
    int experts = 0;
    int top_k = 0;
};

namespace moe_router_detail {

// Σ_e exp(row[e] − top) in fp32, added in the order of PyTorch's softmax kernel for rows of at most
// 1024 elements (softmax_warp_forward): the row is padded to the next power of two p, a warp of
// w = min(p, 32) lanes holds elements l, l + w, l + 2w, ... in lane l, each lane adds its own in turn
// (padding adds exp(−inf) = 0), then the lanes combine by a butterfly over xor offsets w/2, ..., 1, after
// which every lane holds the same sum. For 8 experts: ((e0 + e4) + (e2 + e6)) + ((e1 + e5) + (e3 + e7)).
// The order moves the sum by an fp32 ulp at most, but a probability that then rounds to another bf16
// value changes a routing weight, which 32's large outputs show.
template <class T>
__device__ float torch_order_exp_sum(const T* row, int experts, float top) {
    int padded = 1;
    while (padded < experts)
        padded <<= 1;
    const int lanes = padded < 32 ? padded : 32;
    float lane_sum[32];
    for (int l = 0; l < lanes; ++l) {
        float sum = 0.f;
        for (int e = l; e < experts; e += lanes)
            sum = __fadd_rn(sum, expf(to_float(row[e]) - top));
        lane_sum[l] = sum;
    }
    for (int offset = lanes / 2; offset > 0; offset /= 2)
        for (int l = 0; l < lanes; ++l)
            if ((l & offset) == 0) {
                lane_sum[l] = __fadd_rn(lane_sum[l], lane_sum[l | offset]);
                lane_sum[l | offset] = lane_sum[l];
            }
    return lane_sum[0];
}

// One thread per token: softmax of its `experts` logits in fp32 (the sum in PyTorch's order), rounded
// to T, then the top-k.
template <class T>
__global__ void softmax_top_k(const T* logits, long long tokens, int experts, int k, T* weights,
                              long long* selected) {
    float probs[kMaxRouterExperts];
    int chosen[kMaxRouterExperts];
    for (long long t = PKBW_GRID_STRIDE_BEGIN; t < tokens; t += PKBW_GRID_STRIDE_STEP) {
        const T* row = logits + t * experts;
        float top = -INFINITY;
        for (int e = 0; e < experts; ++e)
            top = fmaxf(top, to_float(row[e]));
        const float sum = torch_order_exp_sum(row, experts, top);
        for (int e = 0; e < experts; ++e)
            probs[e] = round_as<T>(expf(to_float(row[e]) - top) / sum);
        router_top_k(probs, experts, k, chosen);
        for (int s = 0; s < k; ++s) {
            weights[t * k + s] = from_float<T>(probs[chosen[s]]);
            selected[t * k + s] = chosen[s];
        }
    }
}

// One block per expert: counts[e] = how many (token, slot) pairs chose e.
__global__ void expert_counts(const long long* selected, long long pairs, long long* counts) {
    __shared__ unsigned long long total;
    if (threadIdx.x == 0)
        total = 0;
    __syncthreads();
    unsigned long long mine = 0;
    for (long long i = threadIdx.x; i < pairs; i += blockDim.x)
        mine += selected[i] == static_cast<long long>(blockIdx.x) ? 1 : 0;
    atomicAdd(&total, mine); // integer sums: the same in any order
    __syncthreads();
    if (threadIdx.x == 0)
        counts[blockIdx.x] = static_cast<long long>(total);
}

// routing_map [experts, tokens] (uint8): 1 where token t chose expert e (expert_mask.sum(dim=1)).
__global__ void routing_map(const long long* selected, long long tokens, int experts, int k,
                            unsigned char* map) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < tokens * experts; i += PKBW_GRID_STRIDE_STEP) {
        const long long e = i / tokens, t = i % tokens;
        unsigned char routed = 0;
        for (int s = 0; s < k; ++s)
            routed |= selected[t * k + s] == e ? 1 : 0;
        map[i] = routed;
    }
}

} // namespace moe_router_detail

// counts[experts] (int64, device) from selected [pairs] (int64 expert ids, device).
inline int moe_expert_counts(const Context& ctx, const long long* selected, long long pairs, int experts,
                             long long* counts) {
    if (experts < 1)
        return ctx.fail("moe_expert_counts: experts must be >= 1");
    moe_router_detail::expert_counts<<<static_cast<unsigned>(experts), 256, 0, ctx.stream()>>>(selected,
                                                                                               pairs, counts);
    return finish(ctx);
}

// routing_map [experts, tokens] (uint8, device; the input of moe_permute.cuh's expert_major_permutation)
// from selected [tokens, k] (int64, device).
inline int moe_routing_map(const Context& ctx, const long long* selected, long long tokens, int experts,
                           int k, unsigned char* map) {
    if (tokens == 0)
        return 0;
    moe_router_detail::routing_map<<<grid_for(tokens * experts), 256, 0, ctx.stream()>>>(selected, tokens,
                                                                                         experts, k, map);
    return finish(ctx);
}

// x [tokens, hidden], weight [experts, hidden], bias [experts] (nullable), all of dtype, on the device.
// Writes weights [tokens, k] (dtype: the chosen probabilities), selected [tokens, k] (int64 expert ids,
// descending probability) and, when not null, counts [experts] (int64).
inline int moe_router(const Context& ctx, DType dtype, const RouterShape& s, const void* x,
                      const void* weight, const void* bias, void* weights, long long* selected,
                      long long* counts) {
    if (s.experts < 1 || s.experts > kMaxRouterExperts || s.top_k < 1 || s.top_k > s.experts)
        return ctx.fail("moe_router: need 1 <= top_k <= experts <= 256");
    if (s.tokens == 0)
        return counts ? moe_expert_counts(ctx, selected, 0, s.experts, counts) : 0;
    void* logits = ctx.scratch("pkbw_tk_moe_router_logits",
                               static_cast<std::size_t>(s.tokens * s.experts) * element_size(dtype));
    PKBW_TRY(linear(ctx, dtype, s.tokens, s.hidden, s.experts, x, weight, bias, logits));
    PKBW_TRY(dispatch_float(ctx, dtype, "moe_router", [&](auto tag) {
        using T = typename decltype(tag)::type;
        moe_router_detail::softmax_top_k<T><<<grid_for(s.tokens, 128), 128, 0, ctx.stream()>>>(
            static_cast<const T*>(logits), s.tokens, s.experts, s.top_k, static_cast<T*>(weights), selected);
        return finish(ctx);
    }));
    if (counts)
        PKBW_TRY(moe_expert_counts(ctx, selected, s.tokens * s.top_k, s.experts, counts));
    return 0;
}

} // namespace pkbw::tk
