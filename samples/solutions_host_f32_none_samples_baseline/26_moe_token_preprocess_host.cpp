// Hand-written sample candidate (not LLM output)
// PKB 26 (MoE token preprocessing: tokens per expert from a one-hot mask [E, 2, M], the split sizes
// to and from every rank, every rank's counts of this rank's experts) on the host backend: the
// counts go into a symmetric array; after a barrier every rank reads its experts' columns from every
// peer; a second barrier keeps the next call from overwriting a slot a peer still reads.
#include "pkbw/solution.h"

#include <cstdint>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& mask = ctx.input(0);
    const int experts = static_cast<int>(ctx.param("num_experts", 8));
    const int world = ctx.world_size;
    if (mask.dtype != pkbw::DType::F32 || mask.ndim != 3 || mask.shape[0] != experts || experts % world) {
        return ctx.fail("this sample expects an fp32 expert_mask [E, top_k, M] with W dividing E");
    }
    const int local_experts = experts / world;
    const std::int64_t per_expert = mask.shape[1] * mask.shape[2];
    const pkbw::SymmetricMemory counts = ctx.symmetric("moe26_host", 64 * sizeof(float));
    float* mine = static_cast<float*>(counts.local);
    const float* m = static_cast<const float*>(mask.data);
    for (int e = 0; e < experts; ++e) {
        float c = 0.f;
        for (std::int64_t i = 0; i < per_expert; ++i) {
            c += m[e * per_expert + i];
        }
        mine[e] = c;
    }
    ctx.barrier();
    auto* input_splits = static_cast<std::int64_t*>(ctx.output(0).data);
    auto* output_splits = static_cast<std::int64_t*>(ctx.output(1).data);
    auto* per_local = static_cast<float*>(ctx.output(2).data);
    auto* sum_local = static_cast<float*>(ctx.output(3).data);
    for (int d = 0; d < world; ++d) {
        float to_d = 0.f;
        for (int j = 0; j < local_experts; ++j) {
            to_d += mine[d * local_experts + j];
        }
        input_splits[d] = static_cast<std::int64_t>(to_d);
    }
    for (int j = 0; j < local_experts; ++j) {
        sum_local[j] = 0.f;
    }
    for (int s = 0; s < world; ++s) {
        const float* theirs = static_cast<const float*>(counts.peers[s]);
        float from_s = 0.f;
        for (int j = 0; j < local_experts; ++j) {
            const float c = theirs[ctx.rank * local_experts + j];
            per_local[s * local_experts + j] = c;
            from_s += c;
            sum_local[j] += c;
        }
        output_splits[s] = static_cast<std::int64_t>(from_s);
    }
    ctx.barrier();
    return 0;
}
