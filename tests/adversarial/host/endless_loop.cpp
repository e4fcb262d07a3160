// Adversarial candidate: every rank loops forever without touching memory or calling the engine.
// Expected: timeout in the candidate phase after --timeout seconds.
#include "pkbw/solution.h"

extern "C" int pkbw_solution(const pkbw::Context&) {
    for (;;)
        asm volatile("" ::: "memory"); // not an infinite loop without side effects (UB): a real spin
}
