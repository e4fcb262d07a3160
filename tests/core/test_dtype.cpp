#include "pkbw/core/dtype.h"

#include <bit>
#include <cmath>
#include <gtest/gtest.h>
#include <limits>

using namespace pkbw;

namespace {
std::uint32_t bits(float f) {
    return std::bit_cast<std::uint32_t>(f);
}
} // namespace

TEST(DType, SizesAndNames) {
    EXPECT_EQ(dtype_size(DType::BF16), 2u);
    EXPECT_EQ(dtype_size(DType::C64), 8u);
    EXPECT_EQ(dtype_size(DType::F8E4M3), 1u);
    EXPECT_EQ(safetensors_dtype_name(DType::F8E4M3), "F8_E4M3");
    for (DType d : kAllDTypes) {
        EXPECT_EQ(dtype_from_safetensors_name(safetensors_dtype_name(d)), d);
        EXPECT_EQ(parse_dtype(dtype_name(d)), d);
    }
    EXPECT_EQ(parse_dtype("bfloat16"), DType::BF16);
    EXPECT_EQ(parse_dtype("float32"), DType::F32);
    EXPECT_FALSE(parse_dtype("bf17").has_value());
}

TEST(DType, Bf16KnownPatterns) {
    EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
    EXPECT_EQ(bf16_to_f32(0xC000), -2.0f);
    EXPECT_EQ(bf16_to_f32(0x7F80), std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(bf16_to_f32(0x7FC0)));
    EXPECT_EQ(bf16_to_f32(0x0001), std::ldexp(1.0f, -133)); // smallest subnormal
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
    // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even keeps 1.0.
    EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3F80);
    // 1 + 3*2^-8 is halfway between 1.0078125 (odd) and 1.015625 (even): rounds up.
    EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3F82);
    EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80); // overflows to inf
    EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::quiet_NaN()) & 0x7FFF, 0x7FC0);
}

TEST(DType, F16KnownPatterns) {
    EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
    EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
    EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));
    EXPECT_EQ(f16_to_f32(0xFC00), -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
    EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
    EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);
    EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000); // halfway to the smallest subnormal: even
    EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002); // 1.5 ulp rounds to 2
    EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
    EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00); // tie to even
    EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7C00);
    // Every half round-trips.
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const float f = f16_to_f32(static_cast<std::uint16_t>(h));
        if (!std::isnan(f)) {
            ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
        }
    }
}

TEST(DType, E4M3KnownPatterns) {
    EXPECT_EQ(e4m3_to_f32(0x38), 1.0f);
    EXPECT_EQ(e4m3_to_f32(0x7E), 448.0f);
    EXPECT_EQ(e4m3_to_f32(0xFE), -448.0f);
    EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9)); // smallest subnormal
    EXPECT_EQ(e4m3_to_f32(0x08), std::ldexp(1.0f, -6)); // smallest normal
    EXPECT_TRUE(std::isnan(e4m3_to_f32(0x7F)));
    EXPECT_TRUE(std::isnan(e4m3_to_f32(0xFF)));
    EXPECT_EQ(f32_to_e4m3(448.0f), 0x7E);
    EXPECT_EQ(f32_to_e4m3(464.0f), 0x7E); // tie rounds to even (448)
    EXPECT_EQ(f32_to_e4m3(470.0f), 0x7F); // rounds past 448: NaN, as PyTorch
    EXPECT_EQ(f32_to_e4m3(1e6f), 0x7F);   // no infinity: NaN
    EXPECT_EQ(f32_to_e4m3(-std::numeric_limits<float>::infinity()), 0xFF);
    EXPECT_EQ(f32_to_e4m3(std::ldexp(1.0f, -10)), 0x00); // half the smallest subnormal: even (0)
    EXPECT_EQ(f32_to_e4m3(std::ldexp(3.0f, -10)), 0x02);
    for (int b = 0; b < 256; ++b) {
        const float f = e4m3_to_f32(static_cast<std::uint8_t>(b));
        if (!std::isnan(f)) {
            ASSERT_EQ(f32_to_e4m3(f), b) << b;
        }
    }
}

TEST(DType, E5M2KnownPatterns) {
    EXPECT_EQ(e5m2_to_f32(0x3C), 1.0f);
    EXPECT_EQ(e5m2_to_f32(0x7B), 57344.0f);
    EXPECT_EQ(e5m2_to_f32(0x7C), std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(e5m2_to_f32(0x7F)));
    EXPECT_EQ(e5m2_to_f32(0x01), std::ldexp(1.0f, -16));
    EXPECT_EQ(f32_to_e5m2(57344.0f), 0x7B);
    EXPECT_EQ(f32_to_e5m2(61440.0f), 0x7C); // tie between max and 2^16 rounds to inf
    EXPECT_EQ(f32_to_e5m2(1e9f), 0x7C);
    EXPECT_EQ(f32_to_e5m2(std::numeric_limits<float>::quiet_NaN()), 0x7F);
    for (int b = 0; b < 256; ++b) {
        const float f = e5m2_to_f32(static_cast<std::uint8_t>(b));
        if (!std::isnan(f)) {
            ASSERT_EQ(f32_to_e5m2(f), b) << b;
        }
    }
}

TEST(DType, ElementConversions) {
    const std::int64_t big = (1ll << 53) + 1; // not representable in f32 or f64 exactly
    EXPECT_EQ(element_to_f32(DType::I64, reinterpret_cast<const std::byte*>(&big)), 9007199254740992.0f);
    const float complex_value[2] = {3.0f, -4.0f};
    EXPECT_EQ(element_to_f32(DType::C64, reinterpret_cast<const std::byte*>(complex_value)), 3.0f);
    const std::uint8_t truth = 7;
    EXPECT_EQ(element_to_f64(DType::Bool, reinterpret_cast<const std::byte*>(&truth)), 1.0);
    std::byte buffer[8];
    f64_to_element(DType::I8, 300.0, buffer);
    EXPECT_EQ(static_cast<std::int8_t>(buffer[0]), 127);
    f64_to_element(DType::BF16, 1.0, buffer);
    EXPECT_EQ(element_to_f32(DType::BF16, buffer), 1.0f);
    EXPECT_EQ(bits(element_to_f32(DType::F16, buffer)) != 0, true);
}
