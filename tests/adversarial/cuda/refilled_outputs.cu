// Adversarial candidate: the old judge's re-checks arrived with refilled (poisoned) outputs while its
// timed calls found the previous call's output in place, so computing only when the output's first
// element is poisoned passed every check and skipped every timed call. Now every call's slot is
// poisoned before its block: the candidate computes every call. Expected for perf: pass, no timing
// finding (and an honest time).
#include "adversarial_common.cuh"

#include <cstdint>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    std::uint16_t first = 0;
    cudaMemcpy(&first, ctx.output(0).data, sizeof first, cudaMemcpyDeviceToHost);
    char mine = first == 0xFFFF ? 1 : 0, all[64] = {};
    ctx.all_gather_host(&mine, 1, all);
    bool refilled = false;
    for (int r = 0; r < ctx.world_size; ++r)
        refilled = refilled || all[r] == 1;
    return refilled ? adversarial::all_reduce(ctx, "refilled") : 0;
}
