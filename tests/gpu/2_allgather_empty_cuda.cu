// An empty candidate for problem 2: does nothing. Timed with `pkbw dryrun --perf`, its per-call time is
// pkbw's own overhead (the event pair around a call that launches nothing).
#include "pkbw/solution.h"

extern "C" int pkbw_solution(const pkbw::Context&) {
    return 0;
}
