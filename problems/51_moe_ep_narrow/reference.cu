// Reference for PKB problem 51 (fused MoE forward, E = the largest divisor of W up to W/2, EP groups of E
// consecutive ranks): the toolkit's MoE pipeline (moe_pipeline.cuh: router, expert-major permutation, count
// exchange, variable all-to-all, one SiLU-GLU MLP per rank, regroup, all-to-all back, weighted scatter-add),
// no LoRA; the exchanges run within ctx.sub_comm_blocks(ep_size) (moe_ep_comm) when ep_size < W.
#include "pkbw/solution.h"
#include "pkbw/toolkit/moe_pipeline.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::moe_forward_reference(ctx, 0);
}
