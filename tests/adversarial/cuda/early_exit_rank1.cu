// Adversarial candidate (cuda): rank 1 calls exit(0) inside the solution. Expected: crash naming
// rank 1 ("exited with code 0 before finishing") in phase candidate.
#include "adversarial_common.cuh"

#include <cstdlib>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.rank == 1)
        std::exit(0);
    return adversarial::all_reduce(ctx, "early_exit");
}
