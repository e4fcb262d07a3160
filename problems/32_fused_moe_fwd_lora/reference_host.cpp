// Host oracle for PKB problem 32: the toolkit's MoE pipeline in float64 (moe_pipeline_host.h) with
// rank-8 LoRA, rounded to the dtype where torch stores a tensor (every F.linear output, each LoRA
// term and its sum with the projection, SiLU, the products, the weighted rows and their sum); the
// router's top-2 uses moe_router.h's tie rule.
#include "pkbw/solution.h"
#include "pkbw/toolkit/moe_pipeline_host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::moe_forward_oracle(ctx, 8);
}
