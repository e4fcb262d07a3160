// Adversarial candidate (cuda): the right answer, but the input is zeroed afterwards (used as scratch).
// Expected: invalid_output "candidate modified input".
#include "adversarial_common.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int status = adversarial::all_reduce(ctx, "mutate");
    cudaMemsetAsync(ctx.input(0).data, 0, ctx.input(0).nbytes(), ctx.stream());
    return status;
}
