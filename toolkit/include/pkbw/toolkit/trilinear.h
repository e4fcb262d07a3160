// Trilinear upsampling (F.interpolate(mode="trilinear", align_corners=False) with scale factors) and the
// bf16 overlap blend of tiled VAE decoding (78), one arithmetic for the device and the host.
//
// The upsampling follows torch's CUDA kernel (UpSampleTrilinear3d.cu) in fp32: the inverse scale is
// 1/scale_factor (scale factors given, so not in/out), the source coordinate max(0, inv·(dst + 0.5) − 0.5),
// its integer part and fraction the index and λ1 (λ0 = 1 − λ1), the next index clamped at the edge, and
// the eight taps summed as t-λ · (h-λ · (w-λ · x + w-λ · x) + ...) in that nesting. nvcc may contract
// those products and sums into FMAs (as it does in torch's build); a host compiler without FMA does not,
// so the two can differ in the last fp32 bit, which changes the bf16 result only when the value sits on
// a bf16 rounding boundary (rarely, by one bf16 ulp).
//
// The blend is PKB's `cur = prev * (1 - ratio) + cur * ratio` on bf16 tensors: ratio = idx / extent in
// double, each product computed in fp32 with the scalar cast to fp32 and rounded to bf16, then the sum
// rounded to bf16 (three roundings, as torch's eager ops store them).
#pragma once

#ifdef __CUDACC__
#define PKBW_TRILINEAR_FN __host__ __device__ inline
#else
#define PKBW_TRILINEAR_FN inline
#endif

#include <cstdint>
#include <cstring>

namespace pkbw::tk {

// fp32 -> bf16 -> fp32, round to nearest even (NaN kept), as torch's cast.
PKBW_TRILINEAR_FN float round_to_bf16(float v) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
        return v;
    bits += 0x7fffu + ((bits >> 16) & 1u);
    bits &= 0xffff0000u;
    float r;
    std::memcpy(&r, &bits, sizeof r);
    return r;
}

// One axis of a linear interpolation: the lower source index, the step to the upper one (0 at the
// edge) and the two weights.
struct LinearTap {
    long long lower;
    long long step;
    float w0, w1;
};

// Output index `dst` of an axis upsampled from `in_size` samples with inverse scale `inverse`
// (= 1 / scale_factor, in fp32), align_corners = False.
PKBW_TRILINEAR_FN LinearTap linear_tap(long long dst, float inverse, long long in_size) {
    float src = inverse * (static_cast<float>(dst) + 0.5f) - 0.5f;
    if (src < 0.f)
        src = 0.f;
    const long long lower = static_cast<long long>(src);
    const float w1 = src - static_cast<float>(lower);
    return {lower, lower < in_size - 1 ? 1 : 0, 1.f - w1, w1};
}

// The trilinear value at taps (t, h, w) of a volume read through at(t, h, w) -> float, in torch's order.
template <class At>
PKBW_TRILINEAR_FN float trilinear(const At& at, const LinearTap& t, const LinearTap& h, const LinearTap& w) {
    const long long t0 = t.lower, t1 = t.lower + t.step, h0 = h.lower, h1 = h.lower + h.step;
    const long long w0 = w.lower, w1 = w.lower + w.step;
    return t.w0 * (h.w0 * (w.w0 * at(t0, h0, w0) + w.w1 * at(t0, h0, w1)) +
                   h.w1 * (w.w0 * at(t0, h1, w0) + w.w1 * at(t0, h1, w1))) +
           t.w1 * (h.w0 * (w.w0 * at(t1, h0, w0) + w.w1 * at(t1, h0, w1)) +
                   h.w1 * (w.w0 * at(t1, h1, w0) + w.w1 * at(t1, h1, w1)));
}

// PKB's blend of position idx < extent of an overlap: prev * (1 - ratio) + cur * ratio in bf16.
PKBW_TRILINEAR_FN float blend_bf16(float prev, float cur, long long idx, long long extent) {
    const double ratio = static_cast<double>(idx) / static_cast<double>(extent);
    const float from_prev = round_to_bf16(prev * static_cast<float>(1.0 - ratio));
    const float from_cur = round_to_bf16(cur * static_cast<float>(ratio));
    return round_to_bf16(from_prev + from_cur);
}

} // namespace pkbw::tk
