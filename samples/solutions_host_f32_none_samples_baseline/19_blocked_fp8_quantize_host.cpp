// Hand-written sample candidate (not LLM output)
// PKB 19 (blocked fp8 quantisation, then all-gather) on the host backend. Each run of block_size
// consecutive elements gets scale = max|x| / 448 and values x / scale (scale 0 divides by 1) cast
// to float8_e4m3fn, rounding to nearest even and saturating at 448. Every rank writes its codes and
// scales into a symmetric buffer; each rank copies all of them, in rank order, into its outputs.
#include "pkbw/solution.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

// float -> e4m3fn (1 sign, 4 exponent bits with bias 7, 3 mantissa bits; no infinity; 0x7F is NaN).
std::uint8_t to_e4m3(float value) {
    if (std::isnan(value)) {
        return 0x7F;
    }
    const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
    const float a = std::fabs(value);
    if (a >= 448.f) {
        return sign | 0x7E; // saturate to the largest finite value
    }
    if (a < 0.015625f) { // below 2^-6: subnormal, steps of 2^-9 (a result of 8 steps is 2^-6, code 0x08)
        return sign | static_cast<std::uint8_t>(std::nearbyint(a * 512.f));
    }
    int exponent = 0;
    const float fraction = std::frexp(a, &exponent); // a = fraction * 2^exponent, fraction in [0.5, 1)
    int e = exponent - 1;                            // a = (2 * fraction) * 2^e
    int mantissa = static_cast<int>(std::nearbyint((2.f * fraction - 1.f) * 8.f));
    if (mantissa == 8) {
        mantissa = 0;
        ++e;
    }
    return sign | static_cast<std::uint8_t>(((e + 7) << 3) | mantissa);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    if (x.dtype != pkbw::DType::F32) {
        return ctx.fail("host fp8-quantize sample: only f32 input is supported");
    }
    const std::int64_t block = static_cast<std::int64_t>(ctx.param("block_size", 128));
    const std::int64_t count = x.numel();
    if (block <= 0 || count % block != 0) {
        return ctx.fail("host fp8-quantize sample: the element count is not a multiple of block_size");
    }
    const std::int64_t blocks = count / block;
    const std::size_t code_bytes = static_cast<std::size_t>(count);
    const std::size_t scale_bytes = static_cast<std::size_t>(blocks) * sizeof(float);
    const pkbw::SymmetricMemory sym = ctx.symmetric("fp8_quantize_host", code_bytes + scale_bytes);
    auto* codes = static_cast<std::uint8_t*>(sym.local);
    float* scales = reinterpret_cast<float*>(codes + code_bytes);
    const float* xv = x.as<const float>();
    for (std::int64_t b = 0; b < blocks; ++b) {
        float amax = 0.f;
        for (std::int64_t i = b * block; i < (b + 1) * block; ++i) {
            amax = std::fmax(amax, std::fabs(xv[i]));
        }
        const float scale = amax / 448.f;
        const float divisor = scale == 0.f ? 1.f : scale;
        for (std::int64_t i = b * block; i < (b + 1) * block; ++i) {
            codes[i] = to_e4m3(xv[i] / divisor);
        }
        std::memcpy(scales + b, &scale, sizeof(float)); // the buffer is only 1-byte aligned past the codes
    }
    ctx.barrier();
    auto* out_codes = static_cast<std::uint8_t*>(ctx.output(0).data);
    auto* out_scales = static_cast<std::uint8_t*>(ctx.output(1).data);
    for (int r = 0; r < ctx.world_size; ++r) {
        const auto* peer = static_cast<const std::uint8_t*>(sym.peers[r]);
        std::memcpy(out_codes + r * code_bytes, peer, code_bytes);
        std::memcpy(out_scales + r * scale_bytes, peer + code_bytes, scale_bytes);
    }
    ctx.barrier();
    return 0;
}
