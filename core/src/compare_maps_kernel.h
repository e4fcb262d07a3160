// Internal to compare_maps.cpp and compare_maps_error.cpp: the vectorised inner loops of the error-map
// pass (the element rule is core's comparison rule, compare.h; tests/core/test_compare_maps.cpp checks them
// against it). A map row is processed in column chunks of kChunk source columns: the rows of the map row are
// folded, column by column, into a small "band" of running maxima (vertical, element-wise, branch-free,
// stays in L1), and the band is reduced into the map's cells once per chunk.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

// The vector helpers are always inlined into this translation unit; their ABI never matters.
#pragma GCC diagnostic ignored "-Wpsabi"

// Hot loops are built for AVX2 and the baseline, picked at load time (as core's comparison).
#if defined(__x86_64__)
#define PKBW_MAPS_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PKBW_MAPS_CLONES
#endif

namespace pkbw::maps::detail {

inline constexpr int kLanes = 8;
inline constexpr int kChunk = 512; // source columns per band: 5 bands + buffers stay in L1
using VF = float __attribute__((vector_size(4 * kLanes)));
using VI = std::int32_t __attribute__((vector_size(4 * kLanes)));
using VU = std::uint32_t __attribute__((vector_size(4 * kLanes)));
using VH = std::uint16_t __attribute__((vector_size(2 * kLanes)));

inline constexpr float kInf = std::numeric_limits<float>::infinity();

// Running maxima of one chunk of columns over the rows of a map row.
struct Band {
    float* ref_hi; // largest value so far (+inf once a non-finite was seen), -inf before the first row
    float* ref_lo; // smallest finite value so far, +inf before the first row
    float* cand_hi;
    float* cand_lo;
    float* ratio;            // largest error ratio so far
    float* diff_hi;          // cand - ref: largest so far (+inf once a non-finite difference was seen)
    float* diff_lo;          // smallest finite difference so far
    std::int32_t* worst_row; // source row of the column's largest ratio (the first row reaching it)
};

struct SegmentStats {
    std::int64_t fails = 0, ref_nonfinite = 0, cand_nonfinite = 0, diff_nonfinite = 0;
    float max_ratio = 0;
    float max_abs_diff = 0;        // over finite differences
    std::int32_t max_diff_at = -1; // segment offset of the first element holding it; -1 when none is finite
};

// The tolerance as the core comparison applies it: f32 scalars, allowed = atol + rtol * |cand|.
struct Tol {
    float atol, rtol;
};

struct F32Load {
    using Element = float;
    static VF load(const float* p) {
        VF v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
};
struct Bf16Load {
    using Element = std::uint16_t;
    static VF load(const std::uint16_t* p) {
        VH h;
        std::memcpy(&h, p, sizeof h);
        return (VF)(__builtin_convertvector(h, VU) << 16);
    }
};

template <class T>
inline VF load_vf(const T* p) {
    VF v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store_vf(float* p, VF v) {
    std::memcpy(p, &v, sizeof v);
}
inline VI load_vi(const std::int32_t* p) {
    VI v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store_vi(std::int32_t* p, VI v) {
    std::memcpy(p, &v, sizeof v);
}

// Tracks, per lane, the largest and smallest value (the value of largest magnitude is one of them:
// see reduce_values). A non-finite value enters the maximum as +inf, which masks the cell, since no
// finite value reaches it. Returns the non-finite lanes.
inline __attribute__((always_inline)) VI track_value(VF v, float* hi, float* lo) {
    const VU abs_mask = VU{} + 0x7FFFFFFFu;
    const VI finite = (VF)((VU)v & abs_mask) < kInf; // false for NaN
    const VF up = finite ? v : VF{} + kInf;
    const VF old_hi = load_vf(hi), old_lo = load_vf(lo);
    store_vf(hi, up > old_hi ? up : old_hi);
    store_vf(lo, v < old_lo ? v : old_lo); // NaN compares false: kept out
    return ~finite;
}

// One element pair's error ratio |ref - cand| / (atol + rtol |cand|), computed in f32 next to the
// exact verdict of core's rule (equal, or |ref - cand| <= allowed with a finite difference), and
// pinned so that ratio > 1 exactly when the element fails: 0 for equal elements, in (0, 1] for
// other passing ones, above 1 for failing ones, +inf when the difference is not finite.
inline __attribute__((always_inline)) VF ratio_lanes(VF a, VF b, Tol tol, VI& fail) {
    const VU abs_mask = VU{} + 0x7FFFFFFFu;
    const VF zero = {};
    const VF mag_b = (VF)((VU)b & abs_mask);
    const VF d = (VF)((VU)(a - b) & abs_mask);
    const VF allowed = tol.atol + tol.rtol * mag_b;
    const VI equal = a == b;
    const VI finite_d = d < kInf;
    const VI ok = equal | ((d <= allowed) & finite_d);
    fail = ~ok;
    const VF q = d / allowed;
    const float tiny = 0x1p-125f;       // an unequal pass is never 0 (nor subnormal: see BinTable)
    const float one_up = 0x1.000002p0f; // the f32 after 1
    const VF pass = equal ? zero : (q < 1.0f ? (q > tiny ? q : zero + tiny) : zero + 1.0f);
    const VF bad = finite_d ? (q > one_up ? q : zero + one_up) : zero + kInf;
    return ok ? pass : bad;
}

// Per lane, the running figures of one row segment.
struct LaneStats {
    VI fails = {}, nf_a = {}, nf_b = {}, nf_diff = {};
    VF max_ratio = {};
    VF max_abs = VF{} - 1.0f; // largest finite |cand - ref|; -1 before the lane's first finite one
    VI max_at = {};           // the vector offset i where the lane first reached it
};

inline __attribute__((always_inline)) void error_lanes(VF a, VF b, Tol tol, Band& band, std::int32_t i,
                                                       VI row, float* ratio_out, LaneStats& l) {
    l.nf_a -= track_value(a, band.ref_hi + i, band.ref_lo + i);
    l.nf_b -= track_value(b, band.cand_hi + i, band.cand_lo + i);
    const VF diff = b - a;
    // The signed difference, masked like values; its non-finite lanes are counted.
    l.nf_diff -= track_value(diff, band.diff_hi + i, band.diff_lo + i);
    const VF abs_diff = (VF)((VU)diff & (VU{} + 0x7FFFFFFFu));
    const VI larger = (abs_diff < kInf) & (abs_diff > l.max_abs); // strict: the first element keeps a tie
    l.max_abs = larger ? abs_diff : l.max_abs;
    l.max_at = larger ? VI{} + i : l.max_at;
    VI fail;
    const VF r = ratio_lanes(a, b, tol, fail);
    l.fails -= fail;
    l.max_ratio = r > l.max_ratio ? r : l.max_ratio;
    const VF old = load_vf(band.ratio + i);
    const VI higher = r > old;
    store_vf(band.ratio + i, higher ? r : old);
    store_vi(band.worst_row + i, higher ? row : load_vi(band.worst_row + i));
    store_vf(ratio_out + i, r);
}

// n elements of one row segment into the band at column offset 0; ratio_out receives each ratio.
template <class A, class B>
inline __attribute__((always_inline)) void
error_segment_impl(const typename A::Element* a, const typename B::Element* b, int n, Tol tol, Band band,
                   std::int32_t row, float* ratio_out, SegmentStats& s) {
    LaneStats l;
    const VI rows = VI{} + row;
    int i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        error_lanes(A::load(a + i), B::load(b + i), tol, band, i, rows, ratio_out, l);
    }
    if (i < n) {
        // Zero padding compares equal and finite: it adds nothing but band columns past n, unused.
        typename A::Element ta[kLanes] = {};
        typename B::Element tb[kLanes] = {};
        std::memcpy(ta, a + i, static_cast<std::size_t>(n - i) * sizeof ta[0]);
        std::memcpy(tb, b + i, static_cast<std::size_t>(n - i) * sizeof tb[0]);
        error_lanes(A::load(ta), B::load(tb), tol, band, i, rows, ratio_out, l);
    }
    for (int k = 0; k < kLanes; ++k) {
        s.fails += l.fails[k];
        s.ref_nonfinite += l.nf_a[k];
        s.cand_nonfinite += l.nf_b[k];
        s.diff_nonfinite += l.nf_diff[k];
        s.max_ratio = l.max_ratio[k] > s.max_ratio ? l.max_ratio[k] : s.max_ratio;
        // The segment's largest finite |diff| and its first element. A padding lane (offset n or
        // more) is reached only by a lane that held no finite difference: it is left out.
        const std::int32_t at = l.max_at[k] + k;
        if (l.max_abs[k] >= 0 && at < n &&
            (s.max_diff_at < 0 || l.max_abs[k] > s.max_abs_diff ||
             (l.max_abs[k] == s.max_abs_diff && at < s.max_diff_at))) {
            s.max_abs_diff = l.max_abs[k];
            s.max_diff_at = at;
        }
    }
}

PKBW_MAPS_CLONES inline void error_segment_f32(const float* a, const float* b, int n, Tol tol, Band band,
                                               std::int32_t row, float* ratio_out, SegmentStats& s) {
    error_segment_impl<F32Load, F32Load>(a, b, n, tol, band, row, ratio_out, s);
}
PKBW_MAPS_CLONES inline void error_segment_bf16(const std::uint16_t* a, const std::uint16_t* b, int n,
                                                Tol tol, Band band, std::int32_t row, float* ratio_out,
                                                SegmentStats& s) {
    error_segment_impl<Bf16Load, Bf16Load>(a, b, n, tol, band, row, ratio_out, s);
}

// One side only (pool_values): returns the non-finite count.
template <class A>
inline __attribute__((always_inline)) std::int64_t value_segment_impl(const typename A::Element* a, int n,
                                                                      float* hi, float* lo) {
    VI nf = {};
    int i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        nf -= track_value(A::load(a + i), hi + i, lo + i);
    }
    if (i < n) {
        typename A::Element ta[kLanes] = {};
        std::memcpy(ta, a + i, static_cast<std::size_t>(n - i) * sizeof ta[0]);
        nf -= track_value(A::load(ta), hi + i, lo + i);
    }
    std::int64_t count = 0;
    for (int l = 0; l < kLanes; ++l) {
        count += nf[l];
    }
    return count;
}
PKBW_MAPS_CLONES inline std::int64_t value_segment_f32(const float* a, int n, float* hi, float* lo) {
    return value_segment_impl<F32Load>(a, n, hi, lo);
}
PKBW_MAPS_CLONES inline std::int64_t value_segment_bf16(const std::uint16_t* a, int n, float* hi, float* lo) {
    return value_segment_impl<Bf16Load>(a, n, hi, lo);
}

// Largest element of [p, p + n), at least `floor`.
inline float max_of(const float* p, int n, float floor) {
    float m = floor;
    int i = 0;
    if (n >= kLanes) {
        VF acc = VF{} + floor;
        for (; i + kLanes <= n; i += kLanes) {
            const VF v = load_vf(p + i);
            acc = v > acc ? v : acc;
        }
        for (int l = 0; l < kLanes; ++l) {
            m = acc[l] > m ? acc[l] : m;
        }
    }
    for (; i < n; ++i) {
        m = p[i] > m ? p[i] : m;
    }
    return m;
}
inline float min_of(const float* p, int n) {
    float m = kInf;
    int i = 0;
    if (n >= kLanes) {
        VF acc = VF{} + kInf;
        for (; i + kLanes <= n; i += kLanes) {
            const VF v = load_vf(p + i);
            acc = v < acc ? v : acc;
        }
        for (int l = 0; l < kLanes; ++l) {
            m = acc[l] < m ? acc[l] : m;
        }
    }
    for (; i < n; ++i) {
        m = p[i] < m ? p[i] : m;
    }
    return m;
}

// The value of largest magnitude among n band columns, with its magnitude: the largest value or the
// smallest, the positive one on a tie (so that the result does not depend on the order of the
// reduction); NaN with magnitude +inf when a non-finite element is there.
inline void reduce_values(const float* hi, const float* lo, int n, float& out_mag, float& out_val) {
    const float top = max_of(hi, n, -kInf), bottom = min_of(lo, n);
    if (top == kInf) {
        out_mag = kInf;
        out_val = std::numeric_limits<float>::quiet_NaN();
        return;
    }
    out_val = top >= -bottom ? top : bottom;
    out_mag = out_val < 0 ? -out_val : out_val;
}

// f16 -> f32 without branches: the half's exponent is rebiased by a multiplication by 2^-112 (which
// also handles infinities and NaNs), subnormal halves are rebuilt from a 0.5-biased magic number.
inline float f16_bits_to_f32(std::uint16_t h) {
    const std::uint32_t w = static_cast<std::uint32_t>(h) << 16;
    const std::uint32_t sign = w & 0x80000000u, two_w = w + w;
    float normal, subnormal;
    const std::uint32_t normal_bits = (two_w >> 4) + (0xE0u << 23);
    std::memcpy(&normal, &normal_bits, 4);
    normal *= 0x1.0p-112f;
    const std::uint32_t sub_bits = (two_w >> 17) | (126u << 23);
    std::memcpy(&subnormal, &sub_bits, 4);
    subnormal -= 0.5f;
    std::uint32_t nb, sb;
    std::memcpy(&nb, &normal, 4);
    std::memcpy(&sb, &subnormal, 4);
    const std::uint32_t bits = sign | (two_w < (1u << 27) ? sb : nb);
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

} // namespace pkbw::maps::detail
