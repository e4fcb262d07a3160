// Adversarial candidate: rank 1 dereferences a null pointer (SIGSEGV) while rank 0 computes and waits
// for it in a barrier. Expected: crash naming rank 1, SIGSEGV and the candidate phase.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    if (ctx.rank == 1) {
        volatile int* nowhere = nullptr;
        *nowhere = 1;
    }
    const pkbw::SymmetricMemory sym = ctx.symmetric("crash", in.nbytes());
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
