// Adversarial candidate: rank 1 ends its process with exit(0) inside the solution, before any
// collective; rank 0 computes and waits for it. A clean exit code must not read as success.
// Expected: crash naming rank 1 ("exited with code 0 before finishing") in the candidate phase.
#include "pkbw/solution.h"

#include <cstdlib>
#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.rank == 1)
        std::exit(0);
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("early_exit", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r)
            sum += static_cast<const float*>(sym.peers[r])[i];
        out[i] = sum;
    }
    ctx.barrier();
    return 0;
}
