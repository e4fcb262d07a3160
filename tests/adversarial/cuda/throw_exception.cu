// Adversarial candidate: a C++ exception escapes pkbw_solution (on rank 1, or on rank 0 when alone).
// Expected: an error naming the rank, the candidate phase and what(), at once.
#include "adversarial_common.cuh"

#include <stdexcept>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.rank == ctx.world_size - 1) {
        throw std::runtime_error("boom from the candidate");
    }
    ctx.barrier();
    return 0;
}
