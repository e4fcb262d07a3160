// Adversarial candidate: writes zeros, computing nothing. Under a loose tolerance (run with --atol 100)
// zeros are "close enough" to an all-reduce of unit-variance inputs, so the verdict is pass. Expected:
// pass with a warning beside it that the candidate's output is all zero where the reference's is not.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    std::memset(ctx.output(0).data, 0, ctx.output(0).nbytes());
    return 0;
}
