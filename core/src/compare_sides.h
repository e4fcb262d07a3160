// Internal to compare.cpp: how the comparison reads each side of a tensor pair, chunk by chunk
// (widened to f32 words, or straight from contiguous f32 and bf16 data), and measures the ULP distance
// of formats other than f32 from their raw bits.
#pragma once

#include "compare_kernel.h"
#include "pkbw/core/tensor.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pkbw::detail {

// One side of the pair: widens the next chunk into `buffer`, or points straight at contiguous,
// aligned f32 data so that the common f32 case copies nothing.
class ChunkReader {
public:
    explicit ChunkReader(const Tensor& t);

    bool direct_bf16() const { return direct_bf16_; }
    const std::uint16_t* halves(std::int64_t position) const {
        return reinterpret_cast<const std::uint16_t*>(tensor_.data()) + position;
    }
    const std::uint32_t* next(std::int64_t position, std::int64_t n);

private:
    const Tensor& tensor_;
    Cursor cursor_;
    std::size_t element_;
    bool direct_ = false, direct_bf16_ = false;
    GatherFn contiguous_gather_, strided_gather_;
    std::vector<std::uint32_t> buffer_;
};

// ULP distance in a format other than f32 (f16, f64, fp8), from raw bit patterns.
class RawUlp {
public:
    RawUlp(const Tensor& ref, const Tensor& cand);
    std::uint64_t chunk_max(std::int64_t n);

private:
    void fill(Cursor& cursor, std::int64_t n, std::uint64_t* out);
    bool finite(std::uint64_t bits) const;

    DType dtype_;
    std::size_t size_;
    std::uint64_t sign_;
    Cursor ref_, cand_;
    std::vector<std::uint64_t> a_, b_;
};

enum class UlpKind { None, F32, BF16, Raw };

// How a pair's ULP distance is measured: not at all (an integer side), in f32, as bf16 (the top half
// of f32) or from the raw bits of the shared format.
UlpKind ulp_kind(DType ref, DType cand);

} // namespace pkbw::detail
