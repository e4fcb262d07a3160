// Adversarial candidate (cuda): every output element NaN (0xFFFF in bf16). Expected: mismatch, with
// the warning counting the candidate's NaN.
#include "adversarial_common.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    cudaMemsetAsync(ctx.output(0).data, 0xFF, ctx.output(0).nbytes(), ctx.stream());
    return 0;
}
