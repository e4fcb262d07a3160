// Adversarial candidate: right answer, after sleeping 2 s. Expected: pass (slow, not wrong), inside
// the default 60 s candidate deadline.
#include "pkbw/solution.h"

#include <chrono>
#include <cstring>
#include <thread>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("sleep", in.nbytes());
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
