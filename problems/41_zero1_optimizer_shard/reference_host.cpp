// Host oracle for PKB problem 41: the toolkit's ZeRO step in float64 (zero_shard_host.h) with the flat
// gradient summed over ranks (all-reduce) before this rank's slice is taken.
#include "pkbw/solution.h"
#include "pkbw/toolkit/zero_shard_host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::zero_shard_step_f64(ctx, pkbw::tk::GradientSum::AllReduce);
}
