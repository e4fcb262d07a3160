// Reference for PKB problem 28 on the toolkit's MoE pieces: routing_map = expert_mask.sum(dim=1)
// (a small kernel, fp32 as PKB's float mask), tk::expert_major_permutation of that map (straight into
// output_2), tk::gather_rows of the tokens, tk::all_to_all_v with the split lists, and tk::sort_chunks
// with the plan that regroups the (source rank, local expert) chunks local expert first.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gather.cuh"
#include "pkbw/toolkit/moe_permute.cuh"
#include "pkbw/toolkit/split_lists.h"

#include <string>
#include <vector>

namespace {

// map[e, t] = sum_j mask[e, j, t] in fp32, j ascending.
__global__ void sum_over_slots(const float* mask, long long experts, long long slots, long long tokens,
                               float* map) {
    const long long total = experts * tokens;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP) {
        const long long e = i / tokens, t = i % tokens;
        float s = 0.f;
        for (long long j = 0; j < slots; ++j) {
            s += mask[(e * slots + j) * tokens + t];
        }
        map[i] = s;
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& hidden = ctx.input(0);
    const pkbw::TensorView& mask = ctx.input(1);
    const pkbw::TensorView& counts_in = ctx.input(2);
    const pkbw::TensorView& out = ctx.output(0);
    const pkbw::TensorView& map = ctx.output(1);
    const pkbw::TensorView& perm = ctx.output(2);
    const int world = ctx.world_size;
    const long long experts = mask.shape[0], slots = mask.shape[1], tokens = mask.shape[2];
    const int num_experts = static_cast<int>(ctx.param("num_experts", static_cast<double>(experts)));
    if (num_experts != experts || num_experts % world != 0) {
        return ctx.fail(
            "28 reference: num_experts must be expert_mask's first dimension and a multiple of W");
    }
    const std::vector<long long> input_splits = pkbw::tk::rank_list(ctx, "input_splits");
    const std::vector<long long> output_splits = pkbw::tk::rank_list(ctx, "output_splits");
    if (input_splits.empty() || output_splits.empty()) {
        return ctx.fail("28 reference: input_splits and output_splits need one entry per rank");
    }

    sum_over_slots<<<pkbw::tk::grid_for(experts * tokens), 256, 0, ctx.stream()>>>(
        mask.as<const float>(), experts, slots, tokens, map.as<float>());
    PKBW_CHECK(ctx, cudaGetLastError());
    std::vector<long long> per_expert;
    PKBW_TRY(pkbw::tk::expert_major_permutation(ctx, map.data, map.dtype, experts, tokens,
                                                perm.as<long long>(), nullptr, perm.numel(), per_expert));
    const long long rows = pkbw::tk::total_rows(per_expert);
    if (rows != pkbw::tk::total_rows(input_splits)) {
        const std::string why = "28 reference: EP split mismatch: input_splits sum (" +
                                std::to_string(pkbw::tk::total_rows(input_splits)) +
                                ") != permuted tokens (" + std::to_string(rows) + ")";
        return ctx.fail(why.c_str());
    }
    if (rows != perm.numel()) {
        return ctx.fail("28 reference: the routing map does not route 2 experts per token");
    }

    const std::size_t row_bytes =
        static_cast<std::size_t>(hidden.shape[1]) * pkbw::element_size(hidden.dtype);
    void* permuted = ctx.scratch("moe28_permuted", static_cast<std::size_t>(rows) * row_bytes);
    PKBW_TRY(pkbw::tk::gather_rows(ctx, hidden.data, row_bytes, perm.as<const long long>(), rows, tokens,
                                   permuted));
    const void* received = permuted;
    long long received_rows = rows;
    if (world > 1) {
        received_rows = pkbw::tk::total_rows(output_splits);
        void* buffer = ctx.scratch("moe28_received", static_cast<std::size_t>(received_rows) * row_bytes);
        PKBW_TRY(pkbw::tk::all_to_all_v(ctx, ctx.nccl(), permuted, input_splits.data(), buffer,
                                        output_splits.data(), row_bytes));
        received = buffer;
    }

    // The regroup: chunk w*L + l (source rank w, local expert l) has counts[w, l] rows.
    std::vector<long long> counts(static_cast<std::size_t>(counts_in.numel()));
    PKBW_CHECK(ctx, cudaMemcpyAsync(counts.data(), counts_in.data, counts_in.nbytes(), cudaMemcpyDeviceToHost,
                                    ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    std::vector<pkbw::tk::ChunkCopy> plan;
    const std::string why = pkbw::tk::sort_chunks_plan(
        counts, pkbw::tk::local_expert_major_order(num_experts, world), received_rows, plan);
    if (!why.empty()) {
        return ctx.fail(("28 reference: num_global_tokens_per_local_expert: " + why).c_str());
    }
    if (pkbw::tk::planned_rows(plan) != out.shape[0]) {
        return ctx.fail("28 reference: the regrouped rows do not fill output_0");
    }
    return pkbw::tk::sort_chunks(ctx, received, row_bytes, plan, out.data);
}
