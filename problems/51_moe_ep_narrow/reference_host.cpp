// Host oracle for PKB problem 51: the toolkit's MoE pipeline in float64 (moe_pipeline_host.h), rounded
// to the dtype where torch stores a tensor; the router's top-2 uses moe_router.h's tie rule.
#include "pkbw/solution.h"
#include "pkbw/toolkit/moe_pipeline_host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::moe_forward_oracle(ctx, 0);
}
