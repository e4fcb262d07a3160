#include "pkbw/core/dtype.h"
#include "pkbw/toolkit/fp8.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>

namespace {

float from_bits(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

bool is_e4m3_nan(std::uint8_t b) {
    return (b & 0x7F) == 0x7F;
}

} // namespace

// The toolkit's cast (host and device code) agrees with core's PyTorch-rule cast on a dense sweep of
// float bit patterns: every 2^11-th pattern, plus the neighbourhoods of every e4m3 value's midpoints.
TEST(Fp8, E4m3CastMatchesCoreOnASweepOfFloats) {
    long checked = 0;
    for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 2048) {
        const float x = from_bits(static_cast<std::uint32_t>(u));
        const std::uint8_t ours = pkbw::tk::e4m3_from_float(x), core = pkbw::f32_to_e4m3(x);
        if (is_e4m3_nan(core)) {
            ASSERT_TRUE(is_e4m3_nan(ours)) << "x=" << x;
        } else {
            ASSERT_EQ(ours, core) << "x=" << x;
        }
        ++checked;
    }
    for (int b = 0; b < 127; ++b) {
        const float lo = pkbw::e4m3_to_f32(static_cast<std::uint8_t>(b));
        const float hi = pkbw::e4m3_to_f32(static_cast<std::uint8_t>(b + 1));
        const float mid = (lo + hi) / 2;
        for (float x : {mid, std::nextafter(mid, 0.f), std::nextafter(mid, 1e9f), -mid, lo, hi}) {
            const std::uint8_t core = pkbw::f32_to_e4m3(x);
            if (is_e4m3_nan(core))
                EXPECT_TRUE(is_e4m3_nan(pkbw::tk::e4m3_from_float(x))) << "x=" << x;
            else
                EXPECT_EQ(pkbw::tk::e4m3_from_float(x), core) << "x=" << x;
        }
    }
    EXPECT_GT(checked, 2000000);
}

TEST(Fp8, TorchRuleAroundTheTop) {
    using pkbw::tk::e4m3_round_trip;
    EXPECT_EQ(e4m3_round_trip(448.f), 448.f);
    EXPECT_EQ(e4m3_round_trip(464.f), 448.f); // a tie: 448's mantissa is even
    EXPECT_TRUE(std::isnan(e4m3_round_trip(std::nextafter(464.f, 1e9f))));
    EXPECT_TRUE(std::isnan(e4m3_round_trip(-500.f)));
    EXPECT_TRUE(std::isnan(e4m3_round_trip(INFINITY)));
    EXPECT_TRUE(std::isnan(e4m3_round_trip(NAN)));
    EXPECT_EQ(e4m3_round_trip(1.0f / 1024), 0.f);        // half the smallest subnormal: ties to even 0
    EXPECT_EQ(e4m3_round_trip(3.0f / 1024), 2.0f / 512); // 1.5 steps: ties to even 2
    EXPECT_EQ(e4m3_round_trip(-0.3f), -0.3125f);
}

TEST(Fp8, SatfiniteClampsInsteadOfNaN) {
    using pkbw::tk::e4m3_from_float_satfinite;
    using pkbw::tk::e4m3_to_float;
    EXPECT_EQ(e4m3_to_float(e4m3_from_float_satfinite(500.f)), 448.f);
    EXPECT_EQ(e4m3_to_float(e4m3_from_float_satfinite(-INFINITY)), -448.f);
    EXPECT_TRUE(std::isnan(e4m3_to_float(e4m3_from_float_satfinite(NAN))));
    for (float x : {0.f, 0.001f, 0.3f, 1.7f, 100.f, 447.f, -3.1f})
        EXPECT_EQ(e4m3_from_float_satfinite(x), pkbw::tk::e4m3_from_float(x)) << x;
}

TEST(Fp8, DecodeMatchesCore) {
    for (int b = 0; b < 256; ++b) {
        const float ours = pkbw::tk::e4m3_to_float(static_cast<std::uint8_t>(b));
        const float core = pkbw::e4m3_to_f32(static_cast<std::uint8_t>(b));
        if (std::isnan(core))
            EXPECT_TRUE(std::isnan(ours)) << b;
        else
            EXPECT_EQ(ours, core) << b;
    }
}
