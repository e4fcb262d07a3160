// Host oracle for PKB problem 28: routing_map = expert_mask.sum(dim=1) (in double, stored as fp32),
// the toolkit's host expert-major permutation and row gather, the host all_to_all_v with the split
// lists, and the regroup plan local expert first. Bytes of the token rows move unchanged.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/moe_permute_host.h"
#include "pkbw/toolkit/split_lists.h"

#include <cstring>
#include <string>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& hidden = ctx.input(0);
    const pkbw::TensorView& mask = ctx.input(1);
    const pkbw::TensorView& counts_in = ctx.input(2);
    const pkbw::TensorView& out = ctx.output(0);
    const pkbw::TensorView& map_out = ctx.output(1);
    const pkbw::TensorView& perm_out = ctx.output(2);
    const int world = ctx.world_size;
    const long long experts = mask.shape[0], slots = mask.shape[1], tokens = mask.shape[2];
    const int num_experts = static_cast<int>(ctx.param("num_experts", static_cast<double>(experts)));
    if (num_experts != experts || num_experts % world != 0) {
        return ctx.fail("28 oracle: num_experts must be expert_mask's first dimension and a multiple of W");
    }
    const std::vector<long long> input_splits = tk::rank_list(ctx, "input_splits");
    const std::vector<long long> output_splits = tk::rank_list(ctx, "output_splits");
    if (input_splits.empty() || output_splits.empty()) {
        return ctx.fail("28 oracle: input_splits and output_splits need one entry per rank");
    }

    const std::vector<double> m = tk::to_f64(mask);
    std::vector<double> map(static_cast<std::size_t>(experts * tokens), 0.0);
    for (long long e = 0; e < experts; ++e) {
        for (long long j = 0; j < slots; ++j) {
            for (long long t = 0; t < tokens; ++t) {
                map[e * tokens + t] += m[(e * slots + j) * tokens + t];
            }
        }
    }
    tk::store_all(map_out, map);
    // The permutation reads the map as stored (fp32), as PKB's .bool() of the float sum.
    const tk::ExpertMajorPermutation perm =
        tk::expert_major_permutation_host(tk::to_f64(map_out), experts, tokens);
    if (perm.rows() != tk::total_rows(input_splits)) {
        const std::string why = "28 oracle: EP split mismatch: input_splits sum (" +
                                std::to_string(tk::total_rows(input_splits)) + ") != permuted tokens (" +
                                std::to_string(perm.rows()) + ")";
        return ctx.fail(why.c_str());
    }
    if (perm.rows() != perm_out.numel()) {
        return ctx.fail("28 oracle: the routing map does not route 2 experts per token");
    }
    std::memcpy(perm_out.data, perm.sorted_indices.data(), perm_out.nbytes());

    const long long row_bytes = hidden.shape[1] * static_cast<long long>(pkbw::element_size(hidden.dtype));
    const auto* h = static_cast<const std::byte*>(hidden.data);
    const std::vector<std::byte> permuted =
        tk::gather_rows_host(std::vector<std::byte>(h, h + hidden.nbytes()), row_bytes, perm.sorted_indices);
    std::vector<std::byte> received = permuted;
    if (world > 1) {
        received =
            tk::all_to_all_v_host(ctx, permuted.data(), input_splits, static_cast<std::size_t>(row_bytes));
        if (static_cast<long long>(received.size()) != tk::total_rows(output_splits) * row_bytes) {
            return ctx.fail("28 oracle: the peers send a different row count than output_splits expects");
        }
    }
    std::vector<long long> counts(static_cast<std::size_t>(counts_in.numel()));
    std::memcpy(counts.data(), counts_in.data, counts_in.nbytes());
    std::vector<tk::ChunkCopy> plan;
    const std::string why = tk::sort_chunks_plan(counts, tk::local_expert_major_order(num_experts, world),
                                                 static_cast<long long>(received.size()) / row_bytes, plan);
    if (!why.empty()) {
        return ctx.fail(("28 oracle: num_global_tokens_per_local_expert: " + why).c_str());
    }
    if (tk::planned_rows(plan) != out.shape[0]) {
        return ctx.fail("28 oracle: the regrouped rows do not fill output_0");
    }
    tk::sort_chunks_bytes_host(received.data(), static_cast<std::size_t>(row_bytes), plan, out.data);
    return 0;
}
