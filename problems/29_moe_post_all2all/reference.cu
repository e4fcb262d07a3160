// Reference for PKB problem 29 on the toolkit's MoE pieces: tk::sort_chunks with the plan that puts
// the (local expert, source rank) chunks back in source-rank order, tk::all_to_all_v back (send by
// output_splits, receive by input_splits, as PKB's swapped call), tk::dense_routing_weights
// (_generate_weights_idx), the routing map's expert-major permutation for each row's expert,
// tk::permuted_row_weights, and tk::unpermute_scatter_add at the given permutation (products and
// sums rounded to D, rows ascending).
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/moe_permute.cuh"
#include "pkbw/toolkit/split_lists.h"

#include <string>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& expert_outputs = ctx.input(0);
    const pkbw::TensorView& weights = ctx.input(1);
    const pkbw::TensorView& selected = ctx.input(2);
    const pkbw::TensorView& counts_in = ctx.input(3);
    const pkbw::TensorView& map = ctx.input(4);
    const pkbw::TensorView& perm = ctx.input(5);
    const pkbw::TensorView& out = ctx.output(0);
    const int world = ctx.world_size;
    const pkbw::DType dtype = expert_outputs.dtype;
    const long long experts = map.shape[0], tokens = out.shape[0], n = out.shape[1];
    const long long topk = weights.shape[1];
    const int num_experts = static_cast<int>(ctx.param("num_experts", static_cast<double>(experts)));
    if (num_experts != experts || num_experts % world != 0) {
        return ctx.fail(
            "29 reference: num_experts must be routing_map's first dimension and a multiple of W");
    }
    const std::vector<long long> input_splits = tk::rank_list(ctx, "input_splits");
    const std::vector<long long> output_splits = tk::rank_list(ctx, "output_splits");
    if (input_splits.empty() || output_splits.empty()) {
        return ctx.fail("29 reference: input_splits and output_splits need one entry per rank");
    }
    const int local = num_experts / world;

    // Regroup: split by counts.T.ravel() (chunk l*W + w), back to chunk order w*L + l.
    std::vector<long long> counts(static_cast<std::size_t>(counts_in.numel()));
    PKBW_CHECK(ctx, cudaMemcpyAsync(counts.data(), counts_in.data, counts_in.nbytes(), cudaMemcpyDeviceToHost,
                                    ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    std::vector<tk::ChunkCopy> plan;
    const std::string why =
        tk::sort_chunks_plan(tk::transposed(counts, world, local), tk::rank_major_order(num_experts, world),
                             expert_outputs.shape[0], plan);
    if (!why.empty()) {
        return ctx.fail(("29 reference: num_global_tokens_per_local_expert: " + why).c_str());
    }
    const std::size_t row_bytes = static_cast<std::size_t>(n) * pkbw::element_size(dtype);
    const long long regrouped_rows = tk::planned_rows(plan);
    void* regrouped = ctx.scratch("moe29_regrouped", static_cast<std::size_t>(regrouped_rows) * row_bytes);
    PKBW_TRY(tk::sort_chunks(ctx, expert_outputs.data, row_bytes, plan, regrouped));
    const void* back = regrouped;
    long long back_rows = regrouped_rows;
    if (world > 1) {
        if (tk::total_rows(output_splits) != regrouped_rows) {
            return ctx.fail("29 reference: output_splits do not sum to the regrouped rows");
        }
        back_rows = tk::total_rows(input_splits);
        void* buffer = ctx.scratch("moe29_back", static_cast<std::size_t>(back_rows) * row_bytes);
        PKBW_TRY(tk::all_to_all_v(ctx, ctx.nccl(), regrouped, output_splits.data(), buffer,
                                  input_splits.data(), row_bytes));
        back = buffer;
    }

    // Each returned row's weight: dense [T, E] weights at (its token, its expert) in masked_select order.
    void* dense =
        ctx.scratch("moe29_dense", static_cast<std::size_t>(tokens * experts) * pkbw::element_size(dtype));
    PKBW_TRY(tk::dense_routing_weights(ctx, dtype, weights.data, selected.as<const long long>(), tokens, topk,
                                       experts, dense));
    const std::size_t rows_cap = static_cast<std::size_t>(back_rows > 0 ? back_rows : 1);
    auto* sorted = static_cast<long long*>(ctx.scratch("moe29_sorted", rows_cap * sizeof(long long)));
    auto* row_experts = static_cast<int*>(ctx.scratch("moe29_row_experts", rows_cap * sizeof(int)));
    std::vector<long long> per_expert;
    PKBW_TRY(tk::expert_major_permutation(ctx, map.data, map.dtype, experts, tokens, sorted, row_experts,
                                          back_rows, per_expert));
    if (tk::total_rows(per_expert) != back_rows) {
        return ctx.fail("29 reference: routing_map routes a different number of rows than come back");
    }
    void* row_weights = ctx.scratch("moe29_row_weights", rows_cap * pkbw::element_size(dtype));
    PKBW_TRY(
        tk::permuted_row_weights(ctx, dtype, dense, sorted, row_experts, back_rows, experts, row_weights));
    if (perm.numel() > back_rows) {
        return ctx.fail(
            "29 reference: local_input_permutation_mapping is longer than the rows that come back");
    }
    return tk::unpermute_scatter_add(ctx, dtype, back, row_weights, perm.as<const long long>(), perm.numel(),
                                     tokens, n, out.data);
}
