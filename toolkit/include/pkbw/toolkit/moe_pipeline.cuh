// PKB's fused MoE forward (problems 31, 32, 49-51) on the device for references (pkbw reference
// toolkit), stage by stage as PKB's solution() runs it, on the toolkit's pieces:
//
//   1. router              moe_router.cuh   logits, softmax in D, top-k (tie rule: moe_router.h), counts
//   2. permute             moe_permute.cuh  routing map [E, T] -> expert-major rows (masked_select order)
//                          gather.cuh       the rows of x in that order
//   3. count exchange      moe_exchange.cuh all-gather of counts, host split lists (moe_splits.h)
//   4. dispatch            moe_exchange.cuh variable all-to-all within the EP group
//   5. regroup             moe_permute.cuh  chunks [source][local expert] -> [local expert][source]
//   6. expert MLP          moe_mlp.cuh      ONE SiLU-GLU MLP per rank on every received row (PKB applies
//                                           the rank's MLP whatever the expert; not one per expert)
//   7. regroup back, combine (reverse all-to-all), weights per permuted row, weighted scatter-add
//
//     pkbw::tk::MoeLayer layer;  (shape, x, router, mlp, out)
//     PKBW_TRY(pkbw::tk::moe_forward(ctx, dtype, pkbw::tk::ep_world(ctx), layer));
//
// The regroup does not change any value (the MLP is row-wise and the same for every expert); it is
// kept so the rows pass through the MLP in PKB's order. The stream is synchronised at the count
// exchange and in the permutation/unpermute helpers (host-side sizes), as PKB's .tolist() does.
// Scratch names start with "pkbw_tk_moe_pipe_".
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gather.cuh"
#include "pkbw/toolkit/moe_exchange.cuh"
#include "pkbw/toolkit/moe_mlp.cuh"
#include "pkbw/toolkit/moe_permute.cuh"
#include "pkbw/toolkit/moe_permute.h"
#include "pkbw/toolkit/moe_router.cuh"

#include <string>
#include <vector>

namespace pkbw::tk {

// One MoE layer call on this rank (device pointers; dtype of the call for every float tensor).
struct MoeLayer {
    RouterShape shape;              // tokens, hidden, experts, top_k
    const void* x = nullptr;        // [tokens, hidden]
    const void* router_w = nullptr; // [experts, hidden]
    const void* router_b = nullptr; // [experts] (nullable)
    GluMlp mlp;                     // this rank's expert MLP (mlp.hidden == shape.hidden)
    void* out = nullptr;            // [tokens, hidden]
};

namespace moe_pipeline_detail {

inline void* scratch(const Context& ctx, const char* name, long long count, std::size_t elem) {
    const long long n = count > 0 ? count : 1;
    return ctx.scratch(name, static_cast<std::size_t>(n) * elem);
}

} // namespace moe_pipeline_detail

inline int moe_forward(const Context& ctx, DType dtype, const EpComm& ep, const MoeLayer& layer) {
    using moe_pipeline_detail::scratch;
    const RouterShape& s = layer.shape;
    const long long tokens = s.tokens, n = s.hidden, pairs = s.tokens * s.top_k;
    const int experts = s.experts, k = s.top_k;
    const std::size_t es = element_size(dtype), row_bytes = static_cast<std::size_t>(n) * es;
    if (layer.mlp.hidden != n)
        return ctx.fail("moe_forward: the MLP's hidden size differs from the tokens' width");
    if (experts % ep.size != 0)
        return ctx.fail("moe_forward: the expert count must be a multiple of the EP group size");

    // 1. Router.
    void* weights = scratch(ctx, "pkbw_tk_moe_pipe_weights", pairs, es);
    auto* selected =
        static_cast<long long*>(scratch(ctx, "pkbw_tk_moe_pipe_selected", pairs, sizeof(long long)));
    auto* counts =
        static_cast<long long*>(scratch(ctx, "pkbw_tk_moe_pipe_counts", experts, sizeof(long long)));
    PKBW_TRY(moe_router(ctx, dtype, s, layer.x, layer.router_w, layer.router_b, weights, selected, counts));

    // 2. Expert-major permutation of the tokens.
    auto* map = static_cast<unsigned char*>(scratch(ctx, "pkbw_tk_moe_pipe_map", tokens * experts, 1));
    auto* sorted = static_cast<long long*>(scratch(ctx, "pkbw_tk_moe_pipe_sorted", pairs, sizeof(long long)));
    auto* row_experts = static_cast<int*>(scratch(ctx, "pkbw_tk_moe_pipe_row_experts", pairs, sizeof(int)));
    PKBW_TRY(moe_routing_map(ctx, selected, tokens, experts, k, map));
    std::vector<long long> host_counts;
    PKBW_TRY(expert_major_permutation(ctx, map, DType::U8, experts, tokens, sorted, row_experts, pairs,
                                      host_counts));
    long long rows = 0;
    for (long long c : host_counts)
        rows += c;
    void* permuted = scratch(ctx, "pkbw_tk_moe_pipe_permuted", rows * n, es);
    PKBW_TRY(gather_rows(ctx, layer.x, row_bytes, sorted, rows, tokens, permuted));

    // 3-4. Count exchange and dispatch.
    MoeSplits splits;
    PKBW_TRY(moe_exchange_counts(ctx, ep, counts, experts, splits));
    if (splits.sent() != rows)
        return ctx.fail("moe_forward: input_splits do not add up to the permuted rows");
    const long long received = splits.received();
    void* inbox = scratch(ctx, "pkbw_tk_moe_pipe_inbox", received * n, es);
    void* grouped = scratch(ctx, "pkbw_tk_moe_pipe_grouped", received * n, es);
    PKBW_TRY(moe_dispatch(ctx, ep, splits, permuted, inbox, row_bytes));

    // 5. Regroup by local expert.
    std::vector<ChunkCopy> plan;
    std::string why =
        sort_chunks_plan(splits.per_local_expert, local_expert_major_order(experts, ep.size), received, plan);
    if (!why.empty())
        return ctx.fail(("moe_forward: regroup: " + why).c_str());
    PKBW_TRY(sort_chunks(ctx, inbox, row_bytes, plan, grouped));

    // 6. The rank's MLP on every received row (into inbox, free again).
    PKBW_TRY(glu_mlp(ctx, dtype, layer.mlp, grouped, received, inbox));

    // 7. Regroup back, combine, weighted scatter-add.
    const std::vector<long long> back_sizes =
        transposed(splits.per_local_expert, splits.ep_size, splits.local_experts);
    why = sort_chunks_plan(back_sizes, rank_major_order(experts, ep.size), received, plan);
    if (!why.empty())
        return ctx.fail(("moe_forward: regroup back: " + why).c_str());
    PKBW_TRY(sort_chunks(ctx, inbox, row_bytes, plan, grouped));
    PKBW_TRY(moe_combine(ctx, ep, splits, grouped, permuted, row_bytes));
    void* dense = scratch(ctx, "pkbw_tk_moe_pipe_dense", tokens * experts, es);
    void* row_w = scratch(ctx, "pkbw_tk_moe_pipe_row_weights", rows, es);
    PKBW_TRY(dense_routing_weights(ctx, dtype, weights, selected, tokens, k, experts, dense));
    PKBW_TRY(permuted_row_weights(ctx, dtype, dense, sorted, row_experts, rows, experts, row_w));
    PKBW_TRY(unpermute_scatter_add(ctx, dtype, permuted, row_w, sorted, rows, tokens, n, layer.out));
    return finish(ctx);
}

// The layer of PKB's argument order (problems/src/moe_forward.h): inputs 0-8 = hidden_states,
// gate_weight, gate_bias, gate_proj (weight, bias), up_proj (weight, bias), down_proj (weight, bias),
// then with lora_rank > 0 inputs 9-14 = lora_gate_A, lora_gate_B, lora_up_A, lora_up_B, lora_down_A,
// lora_down_B; output 0 = [tokens, hidden]. Params num_experts and top_k.
inline MoeLayer moe_layer_from_inputs(const Context& ctx, int lora_rank) {
    MoeLayer layer;
    const TensorView& x = ctx.input(0);
    layer.shape = {x.shape[0], x.shape[1], static_cast<int>(ctx.param("num_experts", 0)),
                   static_cast<int>(ctx.param("top_k", 0))};
    layer.x = x.data;
    layer.router_w = ctx.input(1).data;
    layer.router_b = ctx.input(2).data;
    GluMlp& m = layer.mlp;
    m.hidden = x.shape[1];
    m.inter = ctx.input(3).shape[0];
    m.gate_w = ctx.input(3).data;
    m.gate_b = ctx.input(4).data;
    m.up_w = ctx.input(5).data;
    m.up_b = ctx.input(6).data;
    m.down_w = ctx.input(7).data;
    m.down_b = ctx.input(8).data;
    if (lora_rank > 0) {
        m.lora_rank = lora_rank;
        m.lora_gate_a = ctx.input(9).data;
        m.lora_gate_b = ctx.input(10).data;
        m.lora_up_a = ctx.input(11).data;
        m.lora_up_b = ctx.input(12).data;
        m.lora_down_a = ctx.input(13).data;
        m.lora_down_b = ctx.input(14).data;
    }
    layer.out = ctx.output(0).data;
    return layer;
}

// The EP group of PKB's MoE problems: param ep_size (default W) ranks in consecutive blocks (51's
// `_resolve_ep_group_for_narrow_moe`); the world itself when ep_size is W. Collective (sub_comm).
inline EpComm moe_ep_comm(const Context& ctx) {
    const int ep_size = static_cast<int>(ctx.param("ep_size", ctx.world_size));
    if (ep_size >= ctx.world_size)
        return ep_world(ctx);
    return ep_group(ctx.sub_comm_blocks(ep_size));
}

// A whole reference: the layer from the inputs, on moe_ep_comm.
inline int moe_forward_reference(const Context& ctx, int lora_rank) {
    const MoeLayer layer = moe_layer_from_inputs(ctx, lora_rank);
    return moe_forward(ctx, ctx.input(0).dtype, moe_ep_comm(ctx), layer);
}

} // namespace pkbw::tk
