// Host oracle for PKB problem 42: the toolkit's ZeRO step in float64 (zero_shard_host.h) with only this
// rank's slice of the flat gradient summed over ranks (reduce-scatter).
#include "pkbw/solution.h"
#include "pkbw/toolkit/zero_shard_host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::zero_shard_step_f64(ctx, pkbw::tk::GradientSum::ReduceScatter);
}
