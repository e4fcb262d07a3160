// Adversarial candidate: starts a process in a session of its own that would outlive the run
// (sleep 600), then computes the right answer. Expected: pass, with a warning naming the process it
// left, which pkbw killed.
#include "pkbw/solution.h"

#include <cstring>
#include <unistd.h>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool started = false;
    if (!started && ctx.rank == 1) {
        started = true;
        if (::fork() == 0) {
            ::setsid();
            if (::fork() == 0) {
                ::execl("/bin/sleep", "sleep", "600", nullptr);
            }
            ::_exit(0);
        }
    }
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("leave", in.nbytes());
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
