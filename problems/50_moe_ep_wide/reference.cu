// Reference for PKB problem 50 (fused MoE forward, E = 2W: two experts per rank): the toolkit's MoE pipeline
// (moe_pipeline.cuh: router, expert-major permutation, count exchange, variable all-to-all, one
// SiLU-GLU MLP per rank, regroup, all-to-all back, weighted scatter-add), no LoRA.
#include "pkbw/solution.h"
#include "pkbw/toolkit/moe_pipeline.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::moe_forward_reference(ctx, 0);
}
