// Adversarial candidate (cuda): every rank spins forever on the host. Expected: timeout in phase
// candidate after --timeout seconds.
#include "adversarial_common.cuh"

extern "C" int pkbw_solution(const pkbw::Context&) {
    for (;;)
        asm volatile("" ::: "memory");
}
