// Adversarial candidate: tells timed calls from checked ones by the gap before a call (an eval's calls
// come far apart, a timed block's back to back) and skips the back-to-back ones, leaving their
// outputs unwritten. On the H200 the old judge reported this "pass, faster x6.06". Expected for perf:
// invalid_timing, every timed call is checked.
#include "adversarial_common.cuh"

#include <chrono>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    using Clock = std::chrono::steady_clock;
    static Clock::time_point last_return{};
    const bool back_to_back = Clock::now() - last_return < std::chrono::microseconds(300);
    char mine = back_to_back ? 1 : 0, all[64] = {};
    ctx.all_gather_host(&mine, 1, all);
    bool skip = true;
    for (int r = 0; r < ctx.world_size; ++r)
        skip = skip && all[r] == 1;
    const int status = skip ? 0 : adversarial::all_reduce(ctx, "gap");
    last_return = Clock::now();
    return status;
}
