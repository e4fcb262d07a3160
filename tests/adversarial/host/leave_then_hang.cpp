// Adversarial candidate: rank 1 starts a process in a session of its own (sleep 600), then every rank
// spins until the watchdog kills the group. The judges die with their group, so what the candidate
// started is re-parented to pkbw. Expected: timeout, with a warning naming the process pkbw killed.
#include "pkbw/solution.h"

#include <unistd.h>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.rank == 1 && ::fork() == 0) {
        ::setsid();
        if (::fork() == 0) {
            ::execl("/bin/sleep", "sleep", "600", nullptr);
        }
        ::_exit(0);
    }
    volatile unsigned long spin = 0;
    while (true) {
        ++spin;
    }
    return 0;
}
