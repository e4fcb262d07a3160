// Adversarial candidate (cuda): sleeps 600 s (run with --timeout 5). Expected: timeout, phase candidate.
#include "adversarial_common.cuh"

#include <chrono>
#include <thread>

extern "C" int pkbw_solution(const pkbw::Context&) {
    std::this_thread::sleep_for(std::chrono::seconds(600));
    return 0;
}
