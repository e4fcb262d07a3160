// How the comparison reads each side of a tensor pair (compare_sides.h): the gather picked per dtype and
// layout, the chunk reader over it, and the raw-bit ULP distance of f16, f64 and fp8 pairs.
#include "compare_sides.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <string>

namespace pkbw::detail {
namespace {

GatherFn pick_gather(DType dtype, bool contiguous) {
    switch (dtype) {
    case DType::BF16:
        return contiguous ? gather_bf16<true> : gather_bf16<false>;
    case DType::F16:
        return contiguous ? gather_f16<true> : gather_f16<false>;
    case DType::F32:
        return contiguous ? gather_f32<true> : gather_f32<false>;
    case DType::F64:
        return gather_generic<DType::F64>;
    case DType::F8E4M3:
        return gather_generic<DType::F8E4M3>;
    case DType::F8E5M2:
        return gather_generic<DType::F8E5M2>;
    case DType::I8:
        return gather_generic<DType::I8>;
    case DType::I16:
        return gather_generic<DType::I16>;
    case DType::I32:
        return gather_generic<DType::I32>;
    case DType::I64:
        return gather_generic<DType::I64>;
    case DType::U8:
        return gather_generic<DType::U8>;
    case DType::Bool:
        return gather_generic<DType::Bool>;
    case DType::C64:
        return gather_generic<DType::C64>;
    }
    throw Error("invalid dtype value " + std::to_string(static_cast<int>(dtype)));
}

} // namespace

ChunkReader::ChunkReader(const Tensor& t)
    : tensor_(t)
    , cursor_(t)
    , element_(dtype_size(t.dtype())) {
    direct_ = t.dtype() == DType::F32 && t.is_contiguous() &&
              reinterpret_cast<std::uintptr_t>(t.data()) % alignof(std::uint32_t) == 0;
    contiguous_gather_ = pick_gather(t.dtype(), true);
    strided_gather_ = pick_gather(t.dtype(), false);
    direct_bf16_ = t.dtype() == DType::BF16 && t.is_contiguous() &&
                   reinterpret_cast<std::uintptr_t>(t.data()) % alignof(std::uint16_t) == 0;
    if (!direct_) {
        buffer_.resize(kChunk);
    }
}

const std::uint32_t* ChunkReader::next(std::int64_t position, std::int64_t n) {
    if (direct_) {
        return reinterpret_cast<const std::uint32_t*>(tensor_.data()) + position;
    }
    std::uint32_t* out = buffer_.data();
    cursor_.take(n, [&](const std::byte* p, std::int64_t stride, std::int64_t count) {
        const bool dense = stride == static_cast<std::int64_t>(element_);
        (dense ? contiguous_gather_ : strided_gather_)(p, stride, count, out);
        out += count;
    });
    return buffer_.data();
}

RawUlp::RawUlp(const Tensor& ref, const Tensor& cand)
    : dtype_(ref.dtype())
    , size_(dtype_size(ref.dtype()))
    , ref_(ref)
    , cand_(cand)
    , a_(kChunk)
    , b_(kChunk) {
    const int bits = static_cast<int>(size_ * 8);
    sign_ = std::uint64_t{1} << (bits - 1);
}

std::uint64_t RawUlp::chunk_max(std::int64_t n) {
    fill(ref_, n, a_.data());
    fill(cand_, n, b_.data());
    std::uint64_t worst = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        if (!finite(a_[i]) || !finite(b_[i])) {
            continue;
        }
        const std::uint64_t ma = a_[i] & (sign_ - 1), mb = b_[i] & (sign_ - 1);
        const bool same_sign = ((a_[i] ^ b_[i]) & sign_) == 0;
        worst = std::max(worst, same_sign ? (ma > mb ? ma - mb : mb - ma) : ma + mb);
    }
    return worst;
}

void RawUlp::fill(Cursor& cursor, std::int64_t n, std::uint64_t* out) {
    cursor.take(n, [&](const std::byte* p, std::int64_t stride, std::int64_t count) {
        gather_raw(p, stride, count, size_, out);
        out += count;
    });
}

bool RawUlp::finite(std::uint64_t bits) const {
    switch (dtype_) {
    case DType::F16:
        return (bits & 0x7C00u) != 0x7C00u;
    case DType::F8E5M2:
        return (bits & 0x7Cu) != 0x7Cu;
    case DType::F8E4M3: // no infinities; S.1111.111 is NaN
        return (bits & 0x7Fu) != 0x7Fu;
    default: // f64
        return (bits & 0x7FF0000000000000ull) != 0x7FF0000000000000ull;
    }
}

UlpKind ulp_kind(DType ref, DType cand) {
    const auto floatish = [](DType d) { return is_floating(d) || is_complex(d); };
    if (!floatish(ref) || !floatish(cand)) {
        return UlpKind::None;
    }
    if (ref == cand) {
        switch (ref) {
        case DType::BF16:
            return UlpKind::BF16; // bf16 is the top half of f32: its distance is the f32 one >> 16
        case DType::F16:
        case DType::F64:
        case DType::F8E4M3:
        case DType::F8E5M2:
            return UlpKind::Raw;
        default:
            break;
        }
    }
    return UlpKind::F32;
}

} // namespace pkbw::detail
