// Reference for PKB problem 26 (MoE token preprocessing): the toolkit's fp32 row sums of the mask
// viewed as [E, 2M] give the tokens per expert (integers, exact in fp32 below 2^24), ncclAllGather of
// those E counts, and one small kernel derives the four outputs: the per-destination input splits and
// the per-source output splits as int64, this rank's experts' columns of the gathered counts and
// their sum over ranks as fp32.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/reduce.cuh"

namespace {

__global__ void split_sizes(const float* local_counts, const float* gathered, int world, int rank,
                            int local_experts, long long* input_splits, long long* output_splits,
                            float* per_local_expert, float* sum_per_local_expert) {
    if (threadIdx.x != 0 || blockIdx.x != 0)
        return;
    const int experts = world * local_experts;
    for (int d = 0; d < world; ++d) {
        float to_d = 0.f;
        for (int j = 0; j < local_experts; ++j)
            to_d += local_counts[d * local_experts + j];
        input_splits[d] = static_cast<long long>(to_d);
    }
    for (int j = 0; j < local_experts; ++j)
        sum_per_local_expert[j] = 0.f;
    for (int s = 0; s < world; ++s) {
        float from_s = 0.f;
        for (int j = 0; j < local_experts; ++j) {
            const float c = gathered[s * experts + rank * local_experts + j];
            per_local_expert[s * local_experts + j] = c;
            from_s += c;
            sum_per_local_expert[j] += c;
        }
        output_splits[s] = static_cast<long long>(from_s);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& mask = ctx.input(0);
    const int experts = static_cast<int>(ctx.param("num_experts", 8));
    if (mask.dtype != pkbw::DType::F32 || mask.ndim != 3 || mask.shape[0] != experts ||
        experts % ctx.world_size != 0) {
        return ctx.fail("26 reference: expert_mask must be fp32 [num_experts, top_k, M] with W dividing "
                        "num_experts");
    }
    const long long per_expert = mask.shape[1] * mask.shape[2];
    float* local_counts = static_cast<float*>(ctx.scratch("moe26_counts", experts * sizeof(float)));
    float* gathered = static_cast<float*>(
        ctx.scratch("moe26_gathered", static_cast<size_t>(experts) * ctx.world_size * sizeof(float)));
    PKBW_TRY(pkbw::tk::row_reduce(ctx, pkbw::DType::F32, pkbw::tk::RowOp::Sum, mask.data, experts, per_expert,
                                  local_counts));
    PKBW_CHECK(ctx, ncclAllGather(local_counts, gathered, experts, ncclFloat32, ctx.nccl(), ctx.stream()));
    split_sizes<<<1, 1, 0, ctx.stream()>>>(local_counts, gathered, ctx.world_size, ctx.rank,
                                           experts / ctx.world_size, ctx.output(0).as<long long>(),
                                           ctx.output(1).as<long long>(), ctx.output(2).as<float>(),
                                           ctx.output(3).as<float>());
    return pkbw::tk::finish(ctx);
}
