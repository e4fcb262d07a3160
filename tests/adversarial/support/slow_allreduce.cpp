// A correct host all-reduce that takes 150 ms per call, so that the SIGKILL loop (kill9.py) lands its
// kills inside every phase of a run, not only in start-up.
#include "pkbw/solution.h"

#include <chrono>
#include <cstring>
#include <thread>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("slow", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
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
