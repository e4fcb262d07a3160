// Internal to compare.cpp: the streaming pieces of the comparison. A tensor pair is walked in chunks
// of at most kChunk logical elements; each chunk is widened to f32 words in a small buffer (never the
// whole tensor), then one vectorised pass computes the verdict and every statistic for the chunk.
#pragma once

#include "pkbw/core/tensor.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

namespace pkbw::detail {

inline constexpr std::int64_t kChunk = 2048; // 8 KiB of f32 per side: stays in L1

// Walks a tensor in logical (row-major) order, handing out runs of equally spaced elements.
class Cursor {
public:
    explicit Cursor(const Tensor& t)
        : base_(t.data())
        , element_(static_cast<std::int64_t>(dtype_size(t.dtype())))
        , shape_(t.shape())
        , contiguous_(t.is_contiguous()) {
        for (auto s : t.strides()) {
            byte_strides_.push_back(s * element_);
        }
        index_.assign(shape_.size(), 0);
    }

    // Calls fn(first_element, stride_bytes, count) for runs covering the next n elements.
    template <class Fn>
    void take(std::int64_t n, Fn&& fn) {
        if (contiguous_ || shape_.empty()) {
            fn(base_ + offset_, element_, n);
            offset_ += n * element_;
            return;
        }
        const std::size_t last = shape_.size() - 1;
        while (n > 0) {
            const std::int64_t run = std::min(n, shape_[last] - index_[last]);
            fn(base_ + offset_, byte_strides_[last], run);
            n -= run;
            index_[last] += run;
            offset_ += run * byte_strides_[last];
            // Carry into the outer dimensions (odometer).
            for (std::size_t d = last; d > 0 && index_[d] == shape_[d]; --d) {
                offset_ -= index_[d] * byte_strides_[d];
                index_[d] = 0;
                ++index_[d - 1];
                offset_ += byte_strides_[d - 1];
            }
        }
    }

private:
    const std::byte* base_;
    std::int64_t element_;
    Shape shape_;
    std::vector<std::int64_t> byte_strides_;
    std::vector<std::int64_t> index_;
    std::int64_t offset_ = 0;
    bool contiguous_;
};

template <class T>
inline T load_raw(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// f16 -> f32 without branches on the common path: the exponent is rebiased by shifting the half's
// bits into an f32 and multiplying by 2^-112; subnormal halves are rebuilt from a 0.5-biased magic
// number. Exact for every value (tested against f16_to_f32 on all 65536 patterns).
inline std::uint32_t f16_bits_to_f32_bits(std::uint16_t h) {
    const std::uint32_t w = static_cast<std::uint32_t>(h) << 16;
    const std::uint32_t sign = w & 0x80000000u;
    const std::uint32_t two_w = w + w;
    const float normal = std::bit_cast<float>((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
    const float subnormal = std::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f;
    const std::uint32_t magnitude =
        two_w < (1u << 27) ? std::bit_cast<std::uint32_t>(subnormal) : std::bit_cast<std::uint32_t>(normal);
    return sign | magnitude;
}

// Widens `n` elements at `p` (stride in bytes) to f32 bit patterns.
using GatherFn = void (*)(const std::byte* p, std::int64_t stride, std::int64_t n, std::uint32_t* out);

template <bool Contiguous>
void gather_bf16(const std::byte* p, std::int64_t stride, std::int64_t n, std::uint32_t* out) {
    for (std::int64_t i = 0; i < n; ++i) {
        out[i] = static_cast<std::uint32_t>(load_raw<std::uint16_t>(p + i * (Contiguous ? 2 : stride))) << 16;
    }
}

template <bool Contiguous>
void gather_f16(const std::byte* p, std::int64_t stride, std::int64_t n, std::uint32_t* out) {
    for (std::int64_t i = 0; i < n; ++i) {
        out[i] = f16_bits_to_f32_bits(load_raw<std::uint16_t>(p + i * (Contiguous ? 2 : stride)));
    }
}

template <bool Contiguous>
void gather_f32(const std::byte* p, std::int64_t stride, std::int64_t n, std::uint32_t* out) {
    if (Contiguous) {
        std::memcpy(out, p, static_cast<std::size_t>(n) * 4);
        return;
    }
    for (std::int64_t i = 0; i < n; ++i) {
        out[i] = load_raw<std::uint32_t>(p + i * stride);
    }
}

// Every other dtype goes through element_to_f32, which is PyTorch's .float() by definition.
template <DType D>
void gather_generic(const std::byte* p, std::int64_t stride, std::int64_t n, std::uint32_t* out) {
    for (std::int64_t i = 0; i < n; ++i) {
        out[i] = std::bit_cast<std::uint32_t>(element_to_f32(D, p + i * stride));
    }
}

// Raw bit patterns (zero-extended), for ULP distances counted in a format narrower or wider than f32.
inline void gather_raw(const std::byte* p, std::int64_t stride, std::int64_t n, std::size_t size,
                       std::uint64_t* out) {
    for (std::int64_t i = 0; i < n; ++i) {
        std::uint64_t v = 0;
        std::memcpy(&v, p + i * stride, size); // little-endian: the low bytes
        out[i] = v;
    }
}

// Per-chunk results of the vectorised pass, already reduced across lanes.
struct ChunkStats {
    std::int64_t nan[2] = {0, 0}, inf[2] = {0, 0}, zero[2] = {0, 0};
    double sum[2] = {0, 0};
    float min[2], max[2];
    std::int64_t bad = 0, bad_nonfinite = 0;
    float max_abs = 0, max_rel = 0, worst = 0;
    float max_g = -std::numeric_limits<float>::infinity(); // max of |r-c| - rtol|c| over finite pairs
    std::uint32_t max_ulp32 = 0;
};

// The tolerance in f32, as torch.isclose computes it on two f32 tensors: the Python floats atol and
// rtol become f32 scalars, allowed = atol + |rtol * cand|, actual = |ref - cand|, each op rounded to f32.
struct Tolerance {
    float atol, rtol;
};

using F4 = float __attribute__((vector_size(16)));
using I4 = std::int32_t __attribute__((vector_size(16)));
using U4 = std::uint32_t __attribute__((vector_size(16)));

// Accumulators, one per lane; reduced across lanes once per chunk.
struct Lanes {
    I4 nan[2] = {}, inf[2] = {}, zero[2] = {}, bad = {}, bad_nonfinite = {};
    F4 sum[2] = {}, min[2], max[2];
    F4 max_abs = {}, max_rel = {}, worst = {}, max_g;
    U4 max_ulp = {};
};

inline __attribute__((always_inline)) void compare_lanes(F4 va, F4 vb, I4 valid, Tolerance tol, Lanes& acc,
                                                         float* ratio_out) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    const F4 inf4 = {inf, inf, inf, inf};
    const F4 zero4 = {};
    const F4 one4 = {1.0f, 1.0f, 1.0f, 1.0f};
    const float one_up = 0x1.000002p0f; // the f32 after 1: every failing element's ratio is above 1
    const F4 one_up4 = {one_up, one_up, one_up, one_up};
    const U4 abs_mask = {0x7FFFFFFFu, 0x7FFFFFFFu, 0x7FFFFFFFu, 0x7FFFFFFFu};
    const F4 v[2] = {va, vb};
    F4 mag[2];
    I4 finite[2];
    for (int s = 0; s < 2; ++s) {
        mag[s] = (F4)((U4)v[s] & abs_mask);
        finite[s] = (mag[s] < inf4) & valid;
        acc.nan[s] -= (v[s] != v[s]) & valid;
        acc.inf[s] -= (mag[s] == inf4) & valid;
        acc.zero[s] -= (v[s] == zero4) & valid;
        acc.sum[s] += finite[s] ? v[s] : zero4;
        const F4 lo = finite[s] ? v[s] : inf4;
        const F4 hi = finite[s] ? v[s] : -inf4;
        acc.min[s] = lo < acc.min[s] ? lo : acc.min[s];
        acc.max[s] = hi > acc.max[s] ? hi : acc.max[s];
    }
    const F4 atol4 = {tol.atol, tol.atol, tol.atol, tol.atol};
    const F4 rtol4 = {tol.rtol, tol.rtol, tol.rtol, tol.rtol};
    const F4 d = (F4)((U4)(va - vb) & abs_mask);
    const F4 x = rtol4 * mag[1];
    const F4 allowed = atol4 + x;
    const I4 equal = va == vb;
    const I4 finite_d = d < inf4;
    const I4 ok = equal | ((d <= allowed) & finite_d);
    const I4 bad = ~ok & valid;
    acc.bad -= bad;
    acc.bad_nonfinite -= bad & ~finite_d;

    const I4 both = finite[0] & finite[1];
    acc.max_abs = (both & (d > acc.max_abs)) ? d : acc.max_abs;
    const F4 rel = d / mag[1];
    acc.max_rel = (both & (mag[1] != zero4) & (rel > acc.max_rel)) ? rel : acc.max_rel;
    const F4 g = d - x;
    acc.max_g = (both & (g > acc.max_g)) ? g : acc.max_g;

    const F4 q = d / allowed;
    const F4 pass_ratio = equal ? zero4 : (q < one4 ? q : one4);
    const F4 fail_ratio = finite_d ? (q > one_up4 ? q : one_up4) : inf4;
    const F4 r = ok ? pass_ratio : fail_ratio;
    acc.worst = (valid & (r > acc.worst)) ? r : acc.worst;
    std::memcpy(ratio_out, &r, sizeof r);

    // ULP distance on the f32 patterns: sign-magnitude keys, so that -0 and +0 are 0 apart.
    const U4 ua = (U4)va, ub = (U4)vb;
    const U4 ma = ua & abs_mask, mb = ub & abs_mask;
    const U4 hi = ma > mb ? ma : mb;
    const U4 lo = ma > mb ? mb : ma;
    const I4 same_sign = (I4)((ua ^ ub) & ~abs_mask) == (I4){};
    const U4 dist = same_sign ? hi - lo : ma + mb;
    acc.max_ulp = (both & (dist > acc.max_ulp)) ? dist : acc.max_ulp;
}

// One pass over a chunk of widened values. ratio[i] receives the element's error ratio, adjusted so
// that ratio > 1 exactly when the element fails (rounding in the division could otherwise blur it).
inline void compare_chunk(const std::uint32_t* a, const std::uint32_t* b, std::int64_t n, Tolerance tol,
                          float* ratio, ChunkStats& out) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    Lanes acc;
    for (int s = 0; s < 2; ++s) {
        acc.min[s] = F4{inf, inf, inf, inf};
        acc.max[s] = -acc.min[s];
    }
    acc.max_g = F4{-inf, -inf, -inf, -inf};
    const I4 all = {-1, -1, -1, -1};
    std::int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        F4 va, vb;
        std::memcpy(&va, a + i, sizeof va);
        std::memcpy(&vb, b + i, sizeof vb);
        compare_lanes(va, vb, all, tol, acc, ratio + i);
    }
    if (i < n) {
        const std::int64_t rest = n - i;
        std::uint32_t ta[4] = {}, tb[4] = {};
        std::memcpy(ta, a + i, rest * 4);
        std::memcpy(tb, b + i, rest * 4);
        F4 va, vb;
        std::memcpy(&va, ta, sizeof va);
        std::memcpy(&vb, tb, sizeof vb);
        const I4 valid = {0 < rest ? -1 : 0, 1 < rest ? -1 : 0, 2 < rest ? -1 : 0, 3 < rest ? -1 : 0};
        float tr[4];
        compare_lanes(va, vb, valid, tol, acc, tr);
        std::memcpy(ratio + i, tr, rest * sizeof(float));
    }
    for (int s = 0; s < 2; ++s) {
        out.min[s] = inf;
        out.max[s] = -inf;
        double sum = 0;
        for (int l = 0; l < 4; ++l) {
            out.nan[s] += acc.nan[s][l];
            out.inf[s] += acc.inf[s][l];
            out.zero[s] += acc.zero[s][l];
            sum += acc.sum[s][l];
            out.min[s] = std::min(out.min[s], acc.min[s][l]);
            out.max[s] = std::max(out.max[s], acc.max[s][l]);
        }
        out.sum[s] = sum;
    }
    for (int l = 0; l < 4; ++l) {
        out.bad += acc.bad[l];
        out.bad_nonfinite += acc.bad_nonfinite[l];
        out.max_abs = std::max(out.max_abs, acc.max_abs[l]);
        out.max_rel = std::max(out.max_rel, acc.max_rel[l]);
        out.worst = std::max(out.worst, acc.worst[l]);
        out.max_g = std::max(out.max_g, acc.max_g[l]);
        out.max_ulp32 = std::max(out.max_ulp32, acc.max_ulp[l]);
    }
}

} // namespace pkbw::detail
