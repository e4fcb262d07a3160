// Adversarial candidate: a hand-made barrier on the signal pads in which rank 0 waits for a value its
// peers never write, so rank 0 spins forever while rank 1 finishes and moves on. Expected: timeout
// naming rank 0 in the candidate phase.
#include "pkbw/solution.h"

#include <atomic>
#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("deadlock", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    // Arrive: tell every peer (word `rank` of its pad) that this rank's buffer is ready.
    for (int r = 0; r < ctx.world_size; ++r)
        std::atomic_ref<std::uint32_t>(sym.signal_pads[r][ctx.rank]).store(1, std::memory_order_release);
    // Wait: rank 0 expects 2 from every peer (a bug an LLM could write), the others expect 1.
    const std::uint32_t expected = ctx.rank == 0 ? 2 : 1;
    for (int r = 0; r < ctx.world_size; ++r) {
        auto word = std::atomic_ref<std::uint32_t>(sym.signal_pads[ctx.rank][r]);
        while (word.load(std::memory_order_acquire) != expected) {
        }
    }
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r)
            sum += static_cast<const float*>(sym.peers[r])[i];
        out[i] = sum;
    }
    return 0;
}
