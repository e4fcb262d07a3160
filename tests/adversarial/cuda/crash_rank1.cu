// Adversarial candidate (cuda): rank 1 dereferences a null host pointer (SIGSEGV); rank 0 waits for
// it in a barrier. Expected: crash naming rank 1, SIGSEGV, phase candidate.
#include "adversarial_common.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.rank == 1) {
        volatile int* nowhere = nullptr;
        *nowhere = 1;
    }
    return adversarial::all_reduce(ctx, "crash");
}
