// Adversarial candidate (cuda): zeros, computing nothing; run with --atol 100 so zeros pass. Expected:
// pass with the warning that the candidate's output is all zero where the reference's is not.
#include "adversarial_common.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    cudaMemsetAsync(ctx.output(0).data, 0, ctx.output(0).nbytes(), ctx.stream());
    return 0;
}
