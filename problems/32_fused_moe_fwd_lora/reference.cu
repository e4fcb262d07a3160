// Reference for PKB problem 32 (fused MoE forward with rank-8 LoRA, 8 experts over the world): the
// toolkit's MoE pipeline (moe_pipeline.cuh: router, expert-major permutation, count exchange, variable
// all-to-all, one SiLU-GLU MLP per rank with the LoRA terms of moe_mlp.cuh, regroup, all-to-all back,
// weighted scatter-add).
#include "pkbw/solution.h"
#include "pkbw/toolkit/moe_pipeline.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::moe_forward_reference(ctx, 8);
}
