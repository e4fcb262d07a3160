// Adversarial candidate: counts its calls; after an eval's worth (5) it computes one call of three and
// skips two. Expected for perf: invalid_timing, the skipped calls fail their check.
#include "adversarial_common.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static long calls = 0;
    ++calls;
    if (calls > 5 && calls % 3 != 0)
        return 0;
    return adversarial::all_reduce(ctx, "count");
}
