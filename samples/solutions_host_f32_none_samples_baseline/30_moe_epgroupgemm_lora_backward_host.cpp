// Hand-written sample candidate (not LLM output)
// PKB 30 (three SUM all-reduces: [8, N], [8, N], [N, 8]) on the host backend, for fp32 runs: the
// three inputs are packed into one symmetric buffer, a barrier, then each output element is the
// sum of the peers' values in rank order.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32 gradients");
    }
    std::size_t total = 0;
    for (int k = 0; k < 3; ++k) {
        total += ctx.input(k).nbytes();
    }
    const pkbw::SymmetricMemory packed = ctx.symmetric("lora_ar_host", total);
    std::size_t offset = 0;
    for (int k = 0; k < 3; ++k) {
        std::memcpy(static_cast<char*>(packed.local) + offset, ctx.input(k).data, ctx.input(k).nbytes());
        offset += ctx.input(k).nbytes();
    }
    ctx.barrier();
    offset = 0;
    for (int k = 0; k < 3; ++k) {
        float* out = ctx.output(k).as<float>();
        const long long n = ctx.input(k).numel();
        for (long long i = 0; i < n; ++i) {
            float s = 0.f;
            for (int r = 0; r < ctx.world_size; ++r) {
                s += reinterpret_cast<const float*>(static_cast<const char*>(packed.peers[r]) + offset)[i];
            }
            out[i] = s;
        }
        offset += ctx.input(k).nbytes();
    }
    ctx.barrier();
    return 0;
}
