// Adversarial candidate (cuda): a kernel that never ends, on every rank. The engine's synchronise
// after the call never returns. Expected: timeout in phase candidate; the GPU is free afterwards.
#include "adversarial_common.cuh"

namespace {
__global__ void spin(volatile int* flag) {
    while (*flag == 0) {
    }
}
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    int* flag = static_cast<int*>(ctx.scratch("flag", sizeof(int)));
    cudaMemsetAsync(flag, 0, sizeof(int), ctx.stream());
    spin<<<1, 1, 0, ctx.stream()>>>(flag);
    return 0;
}
