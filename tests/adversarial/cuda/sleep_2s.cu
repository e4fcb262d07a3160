// Adversarial candidate (cuda): the right answer after sleeping 2 s. Expected: pass.
#include "adversarial_common.cuh"

#include <chrono>
#include <thread>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    return adversarial::all_reduce(ctx, "sleep");
}
