// Hand-written sample candidate (not LLM output)
// PKB 52 (absmax into a rolled bf16 amax history, scale = max(history)/448, e4m3 round trip of the
// grads, reduce-scatter / W) on the host backend, for fp32 runs: the round trip is written into a
// symmetric buffer, a barrier, then this rank's chunk is summed over the peers.
#include "pkbw/solution.h"

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

std::uint16_t to_bf16(float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest even (inputs are finite here)
    return static_cast<std::uint16_t>(bits >> 16);
}

float from_bf16(std::uint16_t h) {
    const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// float -> float8_e4m3fn -> float: 3 mantissa bits, subnormal step 2^-9, NaN beyond 464.
float e4m3(float v) {
    const float a = std::fabs(v);
    if (std::isnan(v) || a > 464.f) {
        return NAN;
    }
    float step;
    if (a < 0.015625f) {
        step = 1.0f / 512.0f;
    } else {
        int e = 0;
        std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
        step = std::ldexp(1.0f, e - 4);
    }
    return std::copysign(std::nearbyint(a / step) * step, v);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& grads = ctx.input(0);
    if (grads.dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32 grads");
    }
    std::fesetround(FE_TONEAREST);
    const float* g = grads.as<const float>();
    const long long n = grads.numel();
    float amax = 0.f;
    for (long long i = 0; i < n; ++i) {
        amax = std::fmax(amax, std::fabs(g[i]));
    }
    const auto* hist_in = ctx.input(1).as<const std::uint16_t>();
    auto* hist_out = ctx.output(1).as<std::uint16_t>();
    const long long len = ctx.input(1).numel();
    float largest = 0.f;
    for (long long i = 0; i < len; ++i) {
        hist_out[i] = i + 1 < len ? hist_in[i + 1] : to_bf16(amax);
        largest = std::fmax(largest, from_bf16(hist_out[i]));
    }
    const float scale = std::fmax(largest, 1e-12f) * (1.0f / 448.0f);
    const pkbw::SymmetricMemory recon = ctx.symmetric("fp8rs_host", grads.nbytes());
    float* mine = static_cast<float*>(recon.local);
    for (long long i = 0; i < n; ++i) {
        mine[i] = e4m3(g[i] / scale) * scale;
    }
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    const long long chunk = ctx.output(0).numel();
    for (long long i = 0; i < chunk; ++i) {
        float s = 0.f;
        for (int r = 0; r < ctx.world_size; ++r) {
            s += static_cast<const float*>(recon.peers[r])[ctx.rank * chunk + i];
        }
        out[i] = s / static_cast<float>(ctx.world_size);
    }
    ctx.barrier();
    return 0;
}
