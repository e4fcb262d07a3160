// Adversarial candidate: a C++ exception escapes pkbw_solution on rank 1 while rank 0 waits for it in a
// barrier. Expected: an error naming rank 1, the candidate phase and the exception's what(), at once
// (not after a teardown deadline).
#include "pkbw/solution.h"

#include <cstring>
#include <stdexcept>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.rank == 1) {
        throw std::runtime_error("boom on rank 1");
    }
    ctx.barrier();
    std::memset(ctx.output(0).data, 0, ctx.output(0).nbytes());
    return 0;
}
