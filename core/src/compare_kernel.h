// Internal to compare.cpp and compare_sides.cpp: the streaming pieces of the comparison. A tensor pair is
// walked in chunks of at most kChunk logical elements; each chunk is widened to f32 words in a small buffer
// (never the whole tensor), then one vectorised pass computes the verdict and every statistic for the chunk.
#pragma once

#include "pkbw/core/tensor.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

// The vector helpers below are always inlined into one translation unit; their ABI never matters.
#pragma GCC diagnostic ignored "-Wpsabi"

// Hot loops are built for AVX2 and for the baseline, picked at load time. PKBW_COMPARE_BASELINE_ONLY
// builds the baseline alone (to test it on an AVX2 machine).
#if defined(PKBW_COMPARE_BASELINE_ONLY) || !defined(__x86_64__)
#define PKBW_COMPARE_CLONES
#else
#define PKBW_COMPARE_CLONES __attribute__((target_clones("avx2", "default")))
#endif

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

// Per-chunk results of the vectorised pass, already reduced across lanes. Non-finite values are only
// counted in total here; the rare chunks that have any are rescanned to split NaN from Inf.
struct ChunkStats {
    std::int64_t nonfinite[2] = {0, 0}, zero[2] = {0, 0};
    double sum[2] = {0, 0};
    float min[2], max[2];
    std::int64_t bad = 0;
    float max_abs = 0, max_rel = 0, worst = 0;
    float max_g = -std::numeric_limits<float>::infinity(); // max of |r-c| - rtol|c| over finite pairs
    std::uint32_t max_ulp32 = 0;
};

// The tolerance in f32, as torch.isclose computes it on two f32 tensors: the Python floats atol and
// rtol become f32 scalars, allowed = atol + |rtol * cand|, actual = |ref - cand|, each op rounded to f32.
struct Tolerance {
    float atol, rtol;
};

inline constexpr int kLanes = 8;
using VF = float __attribute__((vector_size(4 * kLanes)));
using VI = std::int32_t __attribute__((vector_size(4 * kLanes)));
using VU = std::uint32_t __attribute__((vector_size(4 * kLanes)));

// Accumulators for one side, one per lane. Named members rather than arrays indexed by side, so that
// after inlining every accumulator lives in a register.
struct SideLanes {
    VI nonfinite = {}, zero = {};
    VF sum = {}, min, max;
};
struct Lanes {
    SideLanes a, b;
    VI bad = {};
    VF max_abs = {}, max_rel = {}, worst = {}, max_g;
    VU max_ulp = {};
};

inline __attribute__((always_inline)) VI track_side(VF v, VF mag, VI valid, SideLanes& acc) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    const VF zero = {};
    const VI finite = (mag < inf) & valid; // false for NaN
    acc.nonfinite -= ~finite & valid;
    acc.zero -= (v == zero) & valid;
    acc.sum += finite ? v : zero;
    acc.min = (finite & (v < acc.min)) ? v : acc.min;
    acc.max = (finite & (v > acc.max)) ? v : acc.max;
    return finite;
}

inline __attribute__((always_inline)) void compare_lanes(VF va, VF vb, VI valid, Tolerance tol, Lanes& acc,
                                                         float* ratio_out) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    const VF zero = {};
    const VU abs_mask = VU{} + 0x7FFFFFFFu;
    const VF mag_a = (VF)((VU)va & abs_mask), mag_b = (VF)((VU)vb & abs_mask);
    const VI both = track_side(va, mag_a, valid, acc.a) & track_side(vb, mag_b, valid, acc.b);

    const VF d = (VF)((VU)(va - vb) & abs_mask);
    const VF x = tol.rtol * mag_b;
    const VF allowed = tol.atol + x;
    const VI equal = va == vb;
    const VI finite_d = d < inf;
    const VI ok = equal | ((d <= allowed) & finite_d);
    acc.bad -= ~ok & valid;

    acc.max_abs = (both & (d > acc.max_abs)) ? d : acc.max_abs;
    const VF rel = d / mag_b;
    acc.max_rel = (both & (mag_b != zero) & (rel > acc.max_rel)) ? rel : acc.max_rel;
    const VF g = d - x;
    acc.max_g = (both & (g > acc.max_g)) ? g : acc.max_g;

    // Ratio > 1 exactly when the element fails: rounding in the division could otherwise blur it.
    const float one_up = 0x1.000002p0f; // the f32 after 1
    const VF q = d / allowed;
    const VF pass_ratio = equal ? zero : (q < 1.0f ? q : zero + 1.0f);
    const VF fail_ratio = finite_d ? (q > one_up ? q : zero + one_up) : zero + inf;
    const VF r = ok ? pass_ratio : fail_ratio;
    acc.worst = (valid & (r > acc.worst)) ? r : acc.worst;
    std::memcpy(ratio_out, &r, sizeof r);

    // ULP distance on the f32 patterns: sign-magnitude keys, so that -0 and +0 are 0 apart.
    const VU ma = (VU)mag_a, mb = (VU)mag_b;
    const VI a_above = ma > mb;
    const VI same_sign = (VI)(((VU)va ^ (VU)vb) & ~abs_mask) == 0;
    const VU dist = same_sign ? (a_above ? ma - mb : mb - ma) : ma + mb;
    acc.max_ulp = (both & (dist > acc.max_ulp)) ? dist : acc.max_ulp;
}

// Loads kLanes consecutive elements as f32: from f32 bit patterns, or from bf16 (a 16-bit shift).
struct WordLoad {
    using Element = std::uint32_t;
    static VF load(const Element* p) {
        VF v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
};
struct Bf16Load {
    using Element = std::uint16_t;
    static VF load(const Element* p) {
        using VH = std::uint16_t __attribute__((vector_size(2 * kLanes)));
        VH h;
        std::memcpy(&h, p, sizeof h);
        return (VF)(__builtin_convertvector(h, VU) << 16);
    }
};

template <class Load>
inline __attribute__((always_inline)) void compare_chunk_impl(const typename Load::Element* a,
                                                              const typename Load::Element* b, std::int64_t n,
                                                              Tolerance tol, float* ratio, ChunkStats& out) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    Lanes acc;
    acc.a.min = acc.b.min = VF{} + inf;
    acc.a.max = acc.b.max = VF{} - inf;
    acc.max_g = VF{} - inf;
    const VI all = VI{} - 1;
    std::int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        compare_lanes(Load::load(a + i), Load::load(b + i), all, tol, acc, ratio + i);
    }
    if (i < n) {
        const std::int64_t rest = n - i;
        typename Load::Element ta[kLanes] = {}, tb[kLanes] = {};
        std::int32_t lanes[kLanes];
        for (int l = 0; l < kLanes; ++l) {
            lanes[l] = l < rest ? -1 : 0;
        }
        std::memcpy(ta, a + i, rest * sizeof ta[0]);
        std::memcpy(tb, b + i, rest * sizeof tb[0]);
        VI valid;
        std::memcpy(&valid, lanes, sizeof valid);
        float tr[kLanes];
        compare_lanes(Load::load(ta), Load::load(tb), valid, tol, acc, tr);
        std::memcpy(ratio + i, tr, rest * sizeof(float));
    }
    const SideLanes* sides[2] = {&acc.a, &acc.b};
    for (int s = 0; s < 2; ++s) {
        out.min[s] = inf;
        out.max[s] = -inf;
        double sum = 0;
        for (int l = 0; l < kLanes; ++l) {
            out.nonfinite[s] += sides[s]->nonfinite[l];
            out.zero[s] += sides[s]->zero[l];
            sum += sides[s]->sum[l];
            out.min[s] = std::min(out.min[s], sides[s]->min[l]);
            out.max[s] = std::max(out.max[s], sides[s]->max[l]);
        }
        out.sum[s] = sum;
    }
    for (int l = 0; l < kLanes; ++l) {
        out.bad += acc.bad[l];
        out.max_abs = std::max(out.max_abs, acc.max_abs[l]);
        out.max_rel = std::max(out.max_rel, acc.max_rel[l]);
        out.worst = std::max(out.worst, acc.worst[l]);
        out.max_g = std::max(out.max_g, acc.max_g[l]);
        out.max_ulp32 = std::max(out.max_ulp32, acc.max_ulp[l]);
    }
}

// The hot loop of the comparison, on widened f32 patterns or straight on two contiguous bf16 tensors;
// ratio[i] receives each element's error ratio. Built for AVX2 and baseline, picked at load time.
PKBW_COMPARE_CLONES inline void compare_chunk(const std::uint32_t* a, const std::uint32_t* b, std::int64_t n,
                                              Tolerance tol, float* ratio, ChunkStats& out) {
    compare_chunk_impl<WordLoad>(a, b, n, tol, ratio, out);
}
PKBW_COMPARE_CLONES inline void compare_chunk_bf16(const std::uint16_t* a, const std::uint16_t* b,
                                                   std::int64_t n, Tolerance tol, float* ratio,
                                                   ChunkStats& out) {
    compare_chunk_impl<Bf16Load>(a, b, n, tol, ratio, out);
}

struct PoolGeometry {
    std::int64_t source_rows, source_cols, row_block, col_block, map_cols;
};

inline __attribute__((always_inline)) float segment_max(const float* r, std::int64_t n) {
    float m = 0;
    std::int64_t i = 0;
    if (n >= kLanes) {
        VF acc = {};
        for (; i + kLanes <= n; i += kLanes) {
            VF v;
            std::memcpy(&v, r + i, sizeof v);
            acc = v > acc ? v : acc;
        }
        for (int l = 0; l < kLanes; ++l) {
            m = acc[l] > m ? acc[l] : m;
        }
    }
    for (; i < n; ++i) {
        m = r[i] > m ? r[i] : m;
    }
    return m;
}

// Elementwise running maximum, dst[i] = max(dst[i], src[i]).
inline __attribute__((always_inline)) void max_into(float* dst, const float* src, std::int64_t n) {
    std::int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        VF d, v;
        std::memcpy(&d, dst + i, sizeof d);
        std::memcpy(&v, src + i, sizeof v);
        d = v > d ? v : d;
        std::memcpy(dst + i, &d, sizeof d);
    }
    for (; i < n; ++i) {
        dst[i] = src[i] > dst[i] ? src[i] : dst[i];
    }
}

// Max-pools one chunk of ratios (logical positions [position, position + n)) into the error map.
// Narrow cells (the common case: a 1024-column tensor has 4-column cells) pool down the rows first,
// into `band` (one float per column, vertical vector maxima only), and fold a band of row_block rows
// into its cells once, when its last row completes. Wide cells pool each row segment directly.
PKBW_COMPARE_CLONES inline void pool_chunk(const PoolGeometry& g, std::int64_t position, const float* ratio,
                                           std::int64_t n, float* band, float* map) {
    std::int64_t row = position / g.source_cols;
    std::int64_t col = position - row * g.source_cols;
    while (n > 0) {
        const std::int64_t seg = std::min(n, g.source_cols - col);
        float* map_row = map + (row / g.row_block) * g.map_cols;
        if (band) {
            max_into(band + col, ratio, seg);
            if (col + seg == g.source_cols && ((row + 1) % g.row_block == 0 || row + 1 == g.source_rows)) {
                for (std::int64_t c = 0, cell = 0; c < g.source_cols; c += g.col_block, ++cell) {
                    const float m = segment_max(band + c, std::min(g.col_block, g.source_cols - c));
                    map_row[cell] = m > map_row[cell] ? m : map_row[cell];
                }
                std::memset(band, 0, static_cast<std::size_t>(g.source_cols) * sizeof(float));
            }
        } else {
            for (std::int64_t c = col, end = col + seg; c < end;) {
                const std::int64_t cell = c / g.col_block;
                const std::int64_t stop = std::min(end, (cell + 1) * g.col_block);
                const float m = segment_max(ratio + (c - col), stop - c);
                map_row[cell] = m > map_row[cell] ? m : map_row[cell];
                c = stop;
            }
        }
        ratio += seg;
        n -= seg;
        col = 0;
        ++row;
    }
}

} // namespace pkbw::detail
