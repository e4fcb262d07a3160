// Reference for PKB problem 41: the toolkit's ZeRO step (zero_shard.cuh) with the flat gradient
// all-reduced (sum, dtype) before this rank's slice is divided by W and updated by Adam.
#include "pkbw/solution.h"
#include "pkbw/toolkit/zero_shard.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::zero_shard_step(ctx, pkbw::tk::GradientSum::AllReduce);
}
