// Host oracle for PKB problem 29: the regroup plan back to source-rank order and the host
// all_to_all_v on the rows' bytes, then moe_permute_host.h's _generate_weights_idx, per-row weights
// in the routing map's masked_select order and the scatter-add at the given permutation, emulating
// PyTorch's D arithmetic (each product and each add rounded to D, rows ascending): with 2
// contributions per token that is exactly what PKB computes on the CPU and on CUDA.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/moe_permute_host.h"
#include "pkbw/toolkit/split_lists.h"

#include <cstring>
#include <string>
#include <vector>

namespace {

std::vector<long long> int64s(const pkbw::TensorView& t) {
    std::vector<long long> v(static_cast<std::size_t>(t.numel()));
    std::memcpy(v.data(), t.data, t.nbytes());
    return v;
}

} // namespace

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
        return ctx.fail("29 oracle: num_experts must be routing_map's first dimension and a multiple of W");
    }
    const std::vector<long long> input_splits = tk::rank_list(ctx, "input_splits");
    const std::vector<long long> output_splits = tk::rank_list(ctx, "output_splits");
    if (input_splits.empty() || output_splits.empty()) {
        return ctx.fail("29 oracle: input_splits and output_splits need one entry per rank");
    }
    const int local = num_experts / world;

    std::vector<tk::ChunkCopy> plan;
    const std::string why =
        tk::sort_chunks_plan(tk::transposed(int64s(counts_in), world, local),
                             tk::rank_major_order(num_experts, world), expert_outputs.shape[0], plan);
    if (!why.empty()) {
        return ctx.fail(("29 oracle: num_global_tokens_per_local_expert: " + why).c_str());
    }
    const std::size_t row_bytes = static_cast<std::size_t>(n) * pkbw::element_size(dtype);
    std::vector<std::byte> back(static_cast<std::size_t>(tk::planned_rows(plan)) * row_bytes);
    tk::sort_chunks_bytes_host(expert_outputs.data, row_bytes, plan, back.data());
    if (world > 1) {
        if (tk::total_rows(output_splits) != tk::planned_rows(plan)) {
            return ctx.fail("29 oracle: output_splits do not sum to the regrouped rows");
        }
        back = tk::all_to_all_v_host(ctx, back.data(), output_splits, row_bytes);
        if (static_cast<long long>(back.size() / row_bytes) != tk::total_rows(input_splits)) {
            return ctx.fail("29 oracle: the peers send a different row count than input_splits expects");
        }
    }
    const long long back_rows = static_cast<long long>(back.size() / row_bytes);

    std::string error;
    const std::vector<double> dense = tk::dense_routing_weights_host(tk::to_f64(weights), int64s(selected),
                                                                     tokens, topk, experts, dtype, error);
    if (!error.empty()) {
        return ctx.fail(("29 oracle: " + error).c_str());
    }
    const tk::ExpertMajorPermutation order =
        tk::expert_major_permutation_host(tk::to_f64(map), experts, tokens);
    if (order.rows() != back_rows) {
        return ctx.fail("29 oracle: routing_map routes a different number of rows than come back");
    }
    const std::vector<long long> targets = int64s(perm);
    if (static_cast<long long>(targets.size()) > back_rows) {
        return ctx.fail("29 oracle: local_input_permutation_mapping is longer than the rows that come back");
    }
    const std::vector<double> combined = tk::unpermute_scatter_add_host(
        tk::to_f64(back.data(), dtype, back_rows * n), tk::permuted_row_weights_host(dense, order, experts),
        targets, tokens, n, dtype, error);
    if (!error.empty()) {
        return ctx.fail(("29 oracle: " + error).c_str());
    }
    tk::store_all(out, combined);
    return 0;
}
