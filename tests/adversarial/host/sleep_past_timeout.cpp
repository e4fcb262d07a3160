// Adversarial candidate: sleeps 600 s (run with --timeout 2). Expected: timeout in the candidate
// phase after 2 s, every rank killed.
#include "pkbw/solution.h"

#include <chrono>
#include <thread>

extern "C" int pkbw_solution(const pkbw::Context&) {
    std::this_thread::sleep_for(std::chrono::seconds(600));
    return 0;
}
