// Adversarial candidate: returns 7 on rank 1 without saying why (no ctx.fail()). Expected: error, the
// message names the rank and the code the solution returned.
#include "pkbw/solution.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return ctx.rank == 1 ? 7 : 0;
}
