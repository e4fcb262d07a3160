// The element-type enumeration shared by core and the solution ABI (abi/include/pkbw/solution.h).
// It has no dependencies so that a candidate compiles against it alone. Values are part of the ABI:
// append, never reorder.
#pragma once

#include <cstdint>

namespace pkbw {

enum class DType : std::uint8_t {
    F64 = 0,
    F32 = 1,
    F16 = 2,
    BF16 = 3,
    F8E4M3 = 4, // float8_e4m3fn: no infinities, NaN = S.1111.111, max 448
    F8E5M2 = 5, // float8_e5m2: IEEE-like with infinities, max 57344
    I8 = 6,
    I16 = 7,
    I32 = 8,
    I64 = 9,
    U8 = 10,
    Bool = 11,
    C64 = 12, // complex64: two f32, real then imaginary
};

} // namespace pkbw
