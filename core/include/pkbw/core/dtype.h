// Element types of tensors, their sizes and names, and exact conversions of the narrow float
// formats (bf16, f16, fp8 e4m3/e5m2) to and from f32.
#pragma once

#include "pkbw/dtype_enum.h"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pkbw {

inline constexpr DType kAllDTypes[] = {DType::F64,    DType::F32,  DType::F16, DType::BF16, DType::F8E4M3,
                                       DType::F8E5M2, DType::I8,   DType::I16, DType::I32,  DType::I64,
                                       DType::U8,     DType::Bool, DType::C64};

// Bytes per element.
std::size_t dtype_size(DType dtype);
// pkbw's short name: "f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2", "i8", ..., "bool", "c64".
std::string_view dtype_name(DType dtype);
// The safetensors name: "F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2", "I8", ..., "BOOL", "C64".
std::string_view safetensors_dtype_name(DType dtype);
std::optional<DType> dtype_from_safetensors_name(std::string_view name);
// Accepts pkbw names, safetensors names and PyTorch spellings ("bfloat16", "float32", "half", ...).
std::optional<DType> parse_dtype(std::string_view text);

bool is_floating(DType dtype); // f64, f32, f16, bf16, both fp8
bool is_complex(DType dtype);
bool is_integral(DType dtype); // the integer types and bool

// Narrow float conversions. *_to_f32 is exact (every value of these formats is an f32).
// f32_to_* rounds to nearest, ties to even, as PyTorch's casts do. Overflow follows PyTorch:
// bf16/f16/e5m2 become +-inf; e4m3 (which has no infinity) becomes NaN.
// The bf16 pair is inline: the timed inputs' draws round gigabytes of values through f32_to_bf16.
inline float bf16_to_f32(std::uint16_t bits) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}
inline std::uint16_t f32_to_bf16(float value) {
    const auto bits = std::bit_cast<std::uint32_t>(value);
    if (value != value) {
        // PyTorch produces the canonical quiet NaN, keeping the sign.
        return static_cast<std::uint16_t>(((bits >> 16) & 0x8000u) | 0x7FC0u);
    }
    const std::uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>((bits + rounding_bias) >> 16);
}
float f16_to_f32(std::uint16_t bits);
std::uint16_t f32_to_f16(float value);
float e4m3_to_f32(std::uint8_t bits);
std::uint8_t f32_to_e4m3(float value);
float e5m2_to_f32(std::uint8_t bits);
std::uint8_t f32_to_e5m2(float value);

// One element, read from raw bytes, as f64 (exact for every dtype but i64 beyond 2^53) and as f32
// (PyTorch's `.float()`: the value every comparison uses). Complex reads its real part, as PyTorch's
// complex-to-real cast does.
double element_to_f64(DType dtype, const std::byte* element);
float element_to_f32(DType dtype, const std::byte* element);
// Write `value` into one element of `dtype`, rounding as the f32_to_* functions do.
void f64_to_element(DType dtype, double value, std::byte* element);

} // namespace pkbw
