// Adversarial candidate: writes NaN into every element. Expected: mismatch, and the verdict's warning
// counts the NaN the candidate produced where the reference has none.
#include "pkbw/solution.h"

#include <limits>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < ctx.output(0).numel(); ++i)
        out[i] = std::numeric_limits<float>::quiet_NaN();
    return 0;
}
