#include "pkbw/core/dtype.h"

#include "pkbw/core/error.h"

#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <string>

namespace pkbw {
namespace {

struct DTypeInfo {
    DType dtype;
    std::size_t size;
    std::string_view name;
    std::string_view safetensors_name;
};

constexpr DTypeInfo kInfo[] = {
    {DType::F64, 8, "f64", "F64"},
    {DType::F32, 4, "f32", "F32"},
    {DType::F16, 2, "f16", "F16"},
    {DType::BF16, 2, "bf16", "BF16"},
    {DType::F8E4M3, 1, "f8e4m3", "F8_E4M3"},
    {DType::F8E5M2, 1, "f8e5m2", "F8_E5M2"},
    {DType::I8, 1, "i8", "I8"},
    {DType::I16, 2, "i16", "I16"},
    {DType::I32, 4, "i32", "I32"},
    {DType::I64, 8, "i64", "I64"},
    {DType::U8, 1, "u8", "U8"},
    {DType::Bool, 1, "bool", "BOOL"},
    {DType::C64, 8, "c64", "C64"},
};

const DTypeInfo& info(DType dtype) {
    const auto index = static_cast<std::size_t>(dtype);
    if (index >= std::size(kInfo)) {
        throw Error("invalid dtype value " + std::to_string(index));
    }
    return kInfo[index];
}

float bits_to_f32(std::uint32_t bits) {
    return std::bit_cast<float>(bits);
}
std::uint32_t f32_to_bits(float value) {
    return std::bit_cast<std::uint32_t>(value);
}

template <class T>
T load(const std::byte* p) {
    T value;
    std::memcpy(&value, p, sizeof(T));
    return value;
}

template <class T>
void store(std::byte* p, T value) {
    std::memcpy(p, &value, sizeof(T));
}

// Round to nearest integer and saturate to T's range (NaN becomes 0), for writing integer elements.
template <class T>
T saturate(double value) {
    if (std::isnan(value)) {
        return 0;
    }
    const double rounded = std::nearbyint(value);
    if (rounded <= static_cast<double>(std::numeric_limits<T>::min())) {
        return std::numeric_limits<T>::min();
    }
    if (rounded >= static_cast<double>(std::numeric_limits<T>::max())) {
        return std::numeric_limits<T>::max();
    }
    return static_cast<T>(rounded);
}

} // namespace

std::size_t dtype_size(DType dtype) {
    return info(dtype).size;
}
std::string_view dtype_name(DType dtype) {
    return info(dtype).name;
}
std::string_view safetensors_dtype_name(DType dtype) {
    return info(dtype).safetensors_name;
}

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
    for (const auto& entry : kInfo) {
        if (entry.safetensors_name == name) {
            return entry.dtype;
        }
    }
    return std::nullopt;
}

std::optional<DType> parse_dtype(std::string_view text) {
    for (const auto& entry : kInfo) {
        if (entry.name == text || entry.safetensors_name == text) {
            return entry.dtype;
        }
    }
    struct Alias {
        std::string_view name;
        DType dtype;
    };
    static constexpr Alias kAliases[] = {
        {"float64", DType::F64}, {"double", DType::F64},    {"float32", DType::F32},
        {"float", DType::F32},   {"float16", DType::F16},   {"half", DType::F16},
        {"fp16", DType::F16},    {"bfloat16", DType::BF16}, {"float8_e4m3fn", DType::F8E4M3},
        {"fp8", DType::F8E4M3},  {"e4m3", DType::F8E4M3},   {"float8_e5m2", DType::F8E5M2},
        {"e5m2", DType::F8E5M2}, {"int8", DType::I8},       {"int16", DType::I16},
        {"int32", DType::I32},   {"int", DType::I32},       {"int64", DType::I64},
        {"long", DType::I64},    {"uint8", DType::U8},      {"complex64", DType::C64},
        {"fp32", DType::F32},    {"fp64", DType::F64},
    };
    for (const auto& alias : kAliases) {
        if (alias.name == text) {
            return alias.dtype;
        }
    }
    return std::nullopt;
}

bool is_floating(DType dtype) {
    switch (dtype) {
    case DType::F64:
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::F8E4M3:
    case DType::F8E5M2:
        return true;
    default:
        return false;
    }
}

bool is_complex(DType dtype) {
    return dtype == DType::C64;
}
bool is_integral(DType dtype) {
    return !is_floating(dtype) && !is_complex(dtype);
}

float f16_to_f32(std::uint16_t bits) {
    const std::uint32_t sign = (bits & 0x8000u) ? 1u : 0u;
    const int exponent = (bits >> 10) & 0x1F;
    const int mantissa = bits & 0x3FF;
    float magnitude;
    if (exponent == 0) {
        magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    } else if (exponent == 31) {
        magnitude =
            mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
        if (mantissa) {
            // Keep the payload so that bit patterns survive a round trip through f32.
            return bits_to_f32((sign << 31) | 0x7F800000u | (static_cast<std::uint32_t>(mantissa) << 13));
        }
    } else {
        magnitude = std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
    }
    return sign ? -magnitude : magnitude;
}

std::uint16_t f32_to_f16(float value) {
    std::uint32_t x = f32_to_bits(value);
    const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    x &= 0x7FFFFFFFu;
    if (x >= 0x7F800000u) { // inf or NaN
        return sign | (x > 0x7F800000u ? 0x7E00u | static_cast<std::uint16_t>((x >> 13) & 0x3FFu) : 0x7C00u);
    }
    if (x >= 0x477FF000u) { // >= 65520 rounds to infinity
        return sign | 0x7C00u;
    }
    if (x < 0x38800000u) { // below 2^-14: a subnormal half (or zero); scaling by 2^24 is exact
        const float scaled = bits_to_f32(x) * 16777216.0f;
        return sign | static_cast<std::uint16_t>(std::nearbyint(scaled));
    }
    const std::uint32_t mantissa_odd = (x >> 13) & 1u;
    x += 0xC8000FFFu + mantissa_odd; // rebias the exponent (127 -> 15) and round to nearest even
    return sign | static_cast<std::uint16_t>(x >> 13);
}

float e4m3_to_f32(std::uint8_t bits) {
    const bool negative = bits & 0x80u;
    const int exponent = (bits >> 3) & 0xF;
    const int mantissa = bits & 0x7;
    float magnitude;
    if (exponent == 0xF && mantissa == 0x7) {
        magnitude = std::numeric_limits<float>::quiet_NaN();
    } else if (exponent == 0) {
        magnitude = std::ldexp(static_cast<float>(mantissa), -9);
    } else {
        magnitude = std::ldexp(static_cast<float>(mantissa + 8), exponent - 10);
    }
    return negative ? -magnitude : magnitude;
}

// Mirrors PyTorch's c10 fp8e4m3fn_from_fp32_value: |x| >= 480 (and inf, NaN) give NaN.
std::uint8_t f32_to_e4m3(float value) {
    std::uint32_t f_bits = f32_to_bits(value);
    const std::uint32_t sign = f_bits & 0x80000000u;
    f_bits ^= sign;
    constexpr std::uint32_t kFp8Max = 1087u << 20;
    constexpr std::uint32_t kDenormMask = 141u << 23;
    std::uint8_t result;
    if (f_bits >= kFp8Max) {
        result = 0x7F;
    } else if (f_bits < (121u << 23)) {
        const float shifted = bits_to_f32(f_bits) + bits_to_f32(kDenormMask);
        result = static_cast<std::uint8_t>(f32_to_bits(shifted) - kDenormMask);
    } else {
        const std::uint32_t mantissa_odd = (f_bits >> 20) & 1u;
        f_bits += (static_cast<std::uint32_t>(7 - 127) << 23) + 0x7FFFFu;
        f_bits += mantissa_odd;
        result = static_cast<std::uint8_t>(f_bits >> 20);
    }
    return result | static_cast<std::uint8_t>(sign >> 24);
}

float e5m2_to_f32(std::uint8_t bits) {
    return f16_to_f32(static_cast<std::uint16_t>(bits) << 8);
}

// Mirrors PyTorch's c10 fp8e5m2_from_fp32_value.
std::uint8_t f32_to_e5m2(float value) {
    std::uint32_t f_bits = f32_to_bits(value);
    const std::uint32_t sign = f_bits & 0x80000000u;
    f_bits ^= sign;
    constexpr std::uint32_t kFp32Inf = 255u << 23;
    constexpr std::uint32_t kFp8Max = 143u << 23;
    constexpr std::uint32_t kDenormMask = 134u << 23;
    std::uint8_t result;
    if (f_bits >= kFp8Max) {
        result = f_bits > kFp32Inf ? 0x7F : 0x7C;
    } else if (f_bits < (113u << 23)) {
        const float shifted = bits_to_f32(f_bits) + bits_to_f32(kDenormMask);
        result = static_cast<std::uint8_t>(f32_to_bits(shifted) - kDenormMask);
    } else {
        const std::uint32_t mantissa_odd = (f_bits >> 21) & 1u;
        f_bits += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xFFFFFu;
        f_bits += mantissa_odd;
        result = static_cast<std::uint8_t>(f_bits >> 21);
    }
    return result | static_cast<std::uint8_t>(sign >> 24);
}

double element_to_f64(DType dtype, const std::byte* p) {
    switch (dtype) {
    case DType::F64:
        return load<double>(p);
    case DType::F32:
        return load<float>(p);
    case DType::F16:
        return f16_to_f32(load<std::uint16_t>(p));
    case DType::BF16:
        return bf16_to_f32(load<std::uint16_t>(p));
    case DType::F8E4M3:
        return e4m3_to_f32(load<std::uint8_t>(p));
    case DType::F8E5M2:
        return e5m2_to_f32(load<std::uint8_t>(p));
    case DType::I8:
        return load<std::int8_t>(p);
    case DType::I16:
        return load<std::int16_t>(p);
    case DType::I32:
        return load<std::int32_t>(p);
    case DType::I64:
        return static_cast<double>(load<std::int64_t>(p));
    case DType::U8:
        return load<std::uint8_t>(p);
    case DType::Bool:
        return load<std::uint8_t>(p) != 0 ? 1.0 : 0.0;
    case DType::C64:
        return load<float>(p); // real part
    }
    throw Error("invalid dtype value " + std::to_string(static_cast<int>(dtype)));
}

// Not element_to_f64 narrowed: int64 -> double -> float can round twice where torch's int64 -> float
// rounds once, and f64 outputs must be narrowed exactly as `.float()` does.
float element_to_f32(DType dtype, const std::byte* p) {
    switch (dtype) {
    case DType::F64:
        return static_cast<float>(load<double>(p));
    case DType::F32:
        return load<float>(p);
    case DType::F16:
        return f16_to_f32(load<std::uint16_t>(p));
    case DType::BF16:
        return bf16_to_f32(load<std::uint16_t>(p));
    case DType::F8E4M3:
        return e4m3_to_f32(load<std::uint8_t>(p));
    case DType::F8E5M2:
        return e5m2_to_f32(load<std::uint8_t>(p));
    case DType::I8:
        return load<std::int8_t>(p);
    case DType::I16:
        return load<std::int16_t>(p);
    case DType::I32:
        return static_cast<float>(load<std::int32_t>(p));
    case DType::I64:
        return static_cast<float>(load<std::int64_t>(p)); // rounds as torch's .float()
    case DType::U8:
        return load<std::uint8_t>(p);
    case DType::Bool:
        return load<std::uint8_t>(p) != 0 ? 1.0f : 0.0f;
    case DType::C64:
        return load<float>(p);
    }
    throw Error("invalid dtype value " + std::to_string(static_cast<int>(dtype)));
}

void f64_to_element(DType dtype, double value, std::byte* p) {
    switch (dtype) {
    case DType::F64:
        store(p, value);
        return;
    case DType::F32:
        store(p, static_cast<float>(value));
        return;
    case DType::F16:
        store(p, f32_to_f16(static_cast<float>(value)));
        return;
    case DType::BF16:
        store(p, f32_to_bf16(static_cast<float>(value)));
        return;
    case DType::F8E4M3:
        store(p, f32_to_e4m3(static_cast<float>(value)));
        return;
    case DType::F8E5M2:
        store(p, f32_to_e5m2(static_cast<float>(value)));
        return;
    case DType::I8:
        store(p, saturate<std::int8_t>(value));
        return;
    case DType::I16:
        store(p, saturate<std::int16_t>(value));
        return;
    case DType::I32:
        store(p, saturate<std::int32_t>(value));
        return;
    case DType::I64:
        store(p, saturate<std::int64_t>(value));
        return;
    case DType::U8:
        store(p, saturate<std::uint8_t>(value));
        return;
    case DType::Bool:
        store(p, static_cast<std::uint8_t>(value != 0.0 ? 1 : 0));
        return;
    case DType::C64: {
        const float parts[2] = {static_cast<float>(value), 0.0f};
        std::memcpy(p, parts, sizeof(parts));
        return;
    }
    }
    throw Error("invalid dtype value " + std::to_string(static_cast<int>(dtype)));
}

} // namespace pkbw
