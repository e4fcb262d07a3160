// Adversarial candidate: tells timed calls from checked ones by the gap before a call. An eval's calls
// come far apart (the judge runs the reference and compares between them); a timed block's calls come
// back to back. So it computes after a long gap and skips a call that follows the last one closely,
// leaving its output unwritten. Expected for perf: invalid_timing, every timed call is checked, and the
// skipped ones fail their check.
#include "pkbw/solution.h"

#include <chrono>
#include <cstring>

namespace {
using Clock = std::chrono::steady_clock;
Clock::time_point last_return{};
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const bool back_to_back = Clock::now() - last_return < std::chrono::microseconds(500);
    // Every rank must make the same collective calls: skip only if all ranks would.
    char mine = back_to_back ? 1 : 0, all[64] = {};
    ctx.all_gather_host(&mine, 1, all);
    bool skip = true;
    for (int r = 0; r < ctx.world_size; ++r)
        skip = skip && all[r] == 1;
    if (!skip) {
        const pkbw::TensorView& in = ctx.input(0);
        const pkbw::SymmetricMemory sym = ctx.symmetric("gap", in.nbytes());
        std::memcpy(sym.local, in.data, in.nbytes());
        ctx.barrier();
        float* out = ctx.output(0).as<float>();
        for (std::int64_t i = 0; i < in.numel(); ++i) {
            float sum = 0.f;
            for (int r = 0; r < ctx.world_size; ++r)
                sum += static_cast<const float*>(sym.peers[r])[i];
            out[i] = sum;
        }
        ctx.barrier();
    }
    last_return = Clock::now();
    return 0;
}
