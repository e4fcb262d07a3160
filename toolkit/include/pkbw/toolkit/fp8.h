// float8_e4m3fn conversions for references and host oracles (pkbw reference toolkit), host and device.
//
// e4m3_from_float follows PyTorch's (c10's) cast: round to nearest, ties to even; subnormals in steps
// of 2^-9; a magnitude above 464 (the midpoint between the largest value 448 and 480, which e4m3fn
// lacks) and NaN become NaN (0x7F with the sign), since e4m3fn has no infinity. `x.to(float8_e4m3fn)`
// in PKB's problems 52 and 53 is this. e4m3_from_float_satfinite is the saturating cast (Triton's
// and the hardware's `.satfinite`, problem 19): magnitudes beyond 448, and infinities, become ±448.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define PKBW_TK_FP8_HD __host__ __device__ __forceinline__
#else
#define PKBW_TK_FP8_HD inline
#endif

namespace pkbw::tk {

namespace detail {

PKBW_TK_FP8_HD std::uint32_t float_bits(float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}

// |x| (bits u, below 2^-6 or in the normal range up to 464) rounded to e4m3, without the sign.
PKBW_TK_FP8_HD std::uint8_t e4m3_magnitude(std::uint32_t u) {
    if (u < 0x3C800000u) { // below 2^-6: the subnormal step is 2^-9, so round |x|·2^9 to an integer
        float scaled;
        std::memcpy(&scaled, &u, sizeof scaled);
        scaled *= 512.0f; // exact: a power of two
        const std::uint32_t whole = static_cast<std::uint32_t>(scaled);
        const float rest = scaled - static_cast<float>(whole);
        const std::uint32_t q = whole + ((rest > 0.5f || (rest == 0.5f && (whole & 1u))) ? 1u : 0u);
        return static_cast<std::uint8_t>(q); // q == 8 is the smallest normal, 0x08
    }
    // Normal: keep 3 of the 23 mantissa bits, round the 20 dropped ones to nearest even; a carry moves
    // into the exponent field, as it should.
    const std::uint32_t exponent = (u >> 23) - 127u + 7u; // 1..15
    std::uint32_t v = (exponent << 3) | ((u >> 20) & 7u);
    const std::uint32_t dropped = u & 0xFFFFFu;
    if (dropped > 0x80000u || (dropped == 0x80000u && (v & 1u)))
        ++v;
    return static_cast<std::uint8_t>(v);
}

} // namespace detail

// PyTorch's float -> float8_e4m3fn (bits).
PKBW_TK_FP8_HD std::uint8_t e4m3_from_float(float x) {
    const std::uint32_t bits = detail::float_bits(x);
    const std::uint8_t sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
    const std::uint32_t u = bits & 0x7FFFFFFFu;
    if (u > 0x43E80000u) // NaN, infinity, or beyond 464
        return sign | 0x7F;
    return sign | detail::e4m3_magnitude(u);
}

// The saturating cast: NaN stays NaN; beyond 448 (infinities too) becomes ±448.
PKBW_TK_FP8_HD std::uint8_t e4m3_from_float_satfinite(float x) {
    const std::uint32_t bits = detail::float_bits(x);
    const std::uint8_t sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
    const std::uint32_t u = bits & 0x7FFFFFFFu;
    if (u > 0x7F800000u)
        return sign | 0x7F;
    if (u >= 0x43E00000u) // 448 and above
        return sign | 0x7E;
    return sign | detail::e4m3_magnitude(u);
}

// float8_e4m3fn bits -> float (exact).
PKBW_TK_FP8_HD float e4m3_to_float(std::uint8_t b) {
    const std::uint32_t exponent = (b >> 3) & 0xFu, mantissa = b & 7u;
    float v;
    if (exponent == 15u && mantissa == 7u) {
        const std::uint32_t nan = 0x7FC00000u;
        std::memcpy(&v, &nan, sizeof v);
    } else if (exponent == 0u) {
        v = static_cast<float>(mantissa) * (1.0f / 512.0f);
    } else {
        const std::uint32_t f = ((exponent - 7u + 127u) << 23) | (mantissa << 20);
        std::memcpy(&v, &f, sizeof v);
    }
    return (b & 0x80u) ? -v : v;
}

// x.to(float8_e4m3fn).to(float32): PKB 52/53's round trip.
PKBW_TK_FP8_HD float e4m3_round_trip(float x) {
    return e4m3_to_float(e4m3_from_float(x));
}

} // namespace pkbw::tk
