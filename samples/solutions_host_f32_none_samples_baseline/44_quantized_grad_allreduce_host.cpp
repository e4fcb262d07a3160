// Hand-written sample candidate (not LLM output)
// PKB 44 (blockwise int8 quantise-dequantise, fp32 sum over ranks, mean, cast) on the host backend,
// for fp32 runs: quantise into a symmetric fp32 buffer, barrier, sum the peers in rank order.
#include "pkbw/solution.h"

#include <algorithm>
#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    if (x.dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32 gradients");
    }
    const float* in = x.as<const float>();
    const long long n = x.numel();
    const long long block = static_cast<long long>(ctx.param("block_size", 128));
    const pkbw::SymmetricMemory rec =
        ctx.symmetric("qgrad_host", static_cast<std::size_t>(n) * sizeof(float));
    float* mine = static_cast<float*>(rec.local);
    for (long long begin = 0; begin < n; begin += block) {
        const long long end = std::min(n, begin + block);
        float absmax = 0.f;
        for (long long i = begin; i < end; ++i) {
            absmax = std::max(absmax, std::fabs(in[i]));
        }
        const float scale = std::max(absmax, 1e-8f) * (1.0f / 127.0f);
        for (long long i = begin; i < end; ++i) {
            mine[i] = std::clamp(std::nearbyint(in[i] / scale), -127.f, 127.f) * scale;
        }
    }
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    const float inv_world = 1.0f / static_cast<float>(ctx.world_size);
    for (long long i = 0; i < n; ++i) {
        float s = 0.f;
        for (int r = 0; r < ctx.world_size; ++r) {
            s += static_cast<const float*>(rec.peers[r])[i];
        }
        out[i] = s * inv_world;
    }
    ctx.barrier();
    return 0;
}
