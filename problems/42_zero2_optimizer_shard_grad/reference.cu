// Reference for PKB problem 42: the toolkit's ZeRO step (zero_shard.cuh) with the flat gradient
// reduce-scattered (sum, dtype) into this rank's slice, which is divided by W and updated by Adam.
#include "pkbw/solution.h"
#include "pkbw/toolkit/zero_shard.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::zero_shard_step(ctx, pkbw::tk::GradientSum::ReduceScatter);
}
