// Host (float64) equivalent of moe_pipeline.cuh: PKB's fused MoE forward (31, 32, 49-51) with torch's
// roundings to the dtype, on the host twins of the same pieces (moe_router_host.h, moe_permute_host.h,
// moe_exchange_host.h, moe_mlp_host.h). Every rank calls it at once; `group` null = the world, else the
// rank's EP group (51).
//
//     pkbw::tk::MoeLayerHost layer = ...;    // the inputs as double
//     std::string error;
//     std::vector<double> out = pkbw::tk::moe_forward_f64(ctx, nullptr, dtype, layer, error);
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/moe_exchange_host.h"
#include "pkbw/toolkit/moe_mlp_host.h"
#include "pkbw/toolkit/moe_permute.h"
#include "pkbw/toolkit/moe_permute_host.h"
#include "pkbw/toolkit/moe_router_host.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pkbw::tk {

struct MoeLayerHost {
    std::int64_t tokens = 0, hidden = 0;
    int experts = 0, top_k = 0;
    std::vector<double> x, router_w, router_b; // [tokens, hidden], [experts, hidden], [experts] (empty: none)
    GluMlpHost mlp;
};

// The layer's output [tokens, hidden] (rounded to dtype), or empty with `error` set. Collective.
inline std::vector<double> moe_forward_f64(const Context& ctx, const SubComm* group, DType dtype,
                                           const MoeLayerHost& L, std::string& error) {
    const int ep_size = group ? group->size : ctx.world_size;
    const std::int64_t n = L.hidden;
    if (L.experts % ep_size != 0) {
        error = "the expert count must be a multiple of the EP group size";
        return {};
    }
    const RouterHost router =
        moe_router_f64(dtype, L.x, L.router_w, L.router_b, L.tokens, n, L.experts, L.top_k);
    const ExpertMajorPermutation perm =
        expert_major_permutation_of(L.experts, L.tokens, [&](long long e, long long t) {
            for (int s = 0; s < L.top_k; ++s)
                if (router.selected[static_cast<std::size_t>(t * L.top_k + s)] == e)
                    return true;
            return false;
        });
    const std::vector<double> permuted = gather_rows_host(L.x, n, perm.sorted_indices);

    MoeSplits splits;
    try {
        splits = moe_exchange_counts_host(ctx, group, router.counts);
    } catch (const std::invalid_argument& e) {
        error = e.what();
        return {};
    }
    const std::vector<double> inbox = moe_dispatch_host(ctx, group, splits, permuted, n);
    const long long received = splits.received();
    std::vector<ChunkCopy> plan;
    error = sort_chunks_plan(splits.per_local_expert, local_expert_major_order(L.experts, ep_size), received,
                             plan);
    if (!error.empty())
        return {};
    const std::vector<double> grouped = sort_chunks_host(inbox, n, plan);

    const std::vector<double> expert_out = glu_mlp_f64(dtype, L.mlp, grouped, received);

    error = sort_chunks_plan(transposed(splits.per_local_expert, splits.ep_size, splits.local_experts),
                             rank_major_order(L.experts, ep_size), received, plan);
    if (!error.empty())
        return {};
    const std::vector<double> back =
        moe_combine_host(ctx, group, splits, sort_chunks_host(expert_out, n, plan), n);
    const std::vector<double> dense = dense_routing_weights_host(router.weights, router.selected, L.tokens,
                                                                 L.top_k, L.experts, dtype, error);
    if (!error.empty())
        return {};
    return unpermute_scatter_add_host(back, permuted_row_weights_host(dense, perm, L.experts),
                                      perm.sorted_indices, L.tokens, n, dtype, error);
}

// The layer of PKB's argument order as double (the inputs of moe_pipeline.cuh's moe_layer_from_inputs).
inline MoeLayerHost moe_layer_from_inputs_host(const Context& ctx, int lora_rank) {
    MoeLayerHost L;
    const TensorView& x = ctx.input(0);
    L.tokens = x.shape[0];
    L.hidden = x.shape[1];
    L.experts = static_cast<int>(ctx.param("num_experts", 0));
    L.top_k = static_cast<int>(ctx.param("top_k", 0));
    L.x = to_f64(x);
    L.router_w = to_f64(ctx.input(1));
    L.router_b = to_f64(ctx.input(2));
    GluMlpHost& m = L.mlp;
    m.hidden = L.hidden;
    m.inter = ctx.input(3).shape[0];
    m.gate_w = to_f64(ctx.input(3));
    m.gate_b = to_f64(ctx.input(4));
    m.up_w = to_f64(ctx.input(5));
    m.up_b = to_f64(ctx.input(6));
    m.down_w = to_f64(ctx.input(7));
    m.down_b = to_f64(ctx.input(8));
    if (lora_rank > 0) {
        m.lora_rank = lora_rank;
        m.lora_gate_a = to_f64(ctx.input(9));
        m.lora_gate_b = to_f64(ctx.input(10));
        m.lora_up_a = to_f64(ctx.input(11));
        m.lora_up_b = to_f64(ctx.input(12));
        m.lora_down_a = to_f64(ctx.input(13));
        m.lora_down_b = to_f64(ctx.input(14));
    }
    return L;
}

// A whole oracle: param ep_size (default W) consecutive ranks per EP group, the world when it is W.
inline int moe_forward_oracle(const Context& ctx, int lora_rank) {
    const MoeLayerHost layer = moe_layer_from_inputs_host(ctx, lora_rank);
    if (layer.experts < 1 || layer.top_k < 1 || layer.top_k > layer.experts)
        return ctx.fail("MoE oracle: params num_experts and top_k must satisfy 1 <= top_k <= num_experts");
    const int ep_size = static_cast<int>(ctx.param("ep_size", ctx.world_size));
    SubComm group{};
    const bool sub = ep_size < ctx.world_size;
    if (sub)
        group = ctx.sub_comm_blocks(ep_size);
    std::string error;
    const std::vector<double> out =
        moe_forward_f64(ctx, sub ? &group : nullptr, ctx.input(0).dtype, layer, error);
    if (!error.empty())
        return ctx.fail(("MoE oracle: " + error).c_str());
    store_all(ctx.output(0), out);
    return 0;
}

} // namespace pkbw::tk
