// Hand-written sample candidate (not LLM output)
// PKB 53 (absmax into a rolled bf16 amax history, scale = max(history)/448, e4m3 round trip of the
// parameter shard, all-gather) on the host backend, for fp32 runs: the round trip is written into a
// symmetric buffer, a barrier, then every peer's buffer is copied into its slice of the output.
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
    const pkbw::TensorView& shard = ctx.input(0);
    if (shard.dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32 parameters");
    }
    std::fesetround(FE_TONEAREST);
    const float* g = shard.as<const float>();
    const long long n = shard.numel();
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
    const pkbw::SymmetricMemory recon = ctx.symmetric("fp8ag_host", shard.nbytes());
    float* mine = static_cast<float*>(recon.local);
    for (long long i = 0; i < n; ++i) {
        mine[i] = e4m3(g[i] / scale) * scale;
    }
    ctx.barrier();
    char* out = static_cast<char*>(ctx.output(0).data);
    for (int r = 0; r < ctx.world_size; ++r) {
        std::memcpy(out + static_cast<std::size_t>(r) * shard.nbytes(), recon.peers[r], shard.nbytes());
    }
    ctx.barrier();
    return 0;
}
