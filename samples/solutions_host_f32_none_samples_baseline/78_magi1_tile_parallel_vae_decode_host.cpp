// Hand-written sample candidate (not LLM output)
// PKB 78 (z [1, C, T, H, W] bf16 per rank; params tile_latent_min_*, *_tile_overlap_factor, *_upsample,
// sr_ratio, first_frame_as_image): the latent is cut into overlapping tiles, dealt by size (largest
// first, stable) round-robin to the ranks; each rank decodes its tiles from its own z (trilinear
// upsampling, align_corners = False, first 3 channels, rounded to bf16) into its slots of a symmetric
// buffer; after a barrier every rank blends every tile with its predecessors' decoded tiles (bf16
// arithmetic), crops it and writes it into the video, reading the decoded tiles from their owners.
// Host backend; the output is bf16 whatever the dtype.
#include "pkbw/solution.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

namespace {

float bf16_to_float(std::uint16_t b) {
    const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}
std::uint16_t float_to_bf16(float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>(bits >> 16);
}
float round_bf16(float f) {
    return bf16_to_float(float_to_bf16(f));
}

struct Axis {
    long long latent, extent, stride, up, blend, keep, tiles;
    long long start(long long i) const { return i * stride; }
    long long size(long long i) const { return std::min(extent, latent - start(i)); }
    long long decoded(long long i) const { return size(i) * up; }
    long long kept(long long i) const { return std::min(keep, decoded(i)); }
    long long offset(long long i) const {
        long long o = 0;
        for (long long j = 0; j < i; ++j)
            o += kept(j);
        return o;
    }
};

Axis make_axis(long long latent, long long extent, double overlap, long long up) {
    Axis a{latent, extent, static_cast<long long>(extent * (1.0 - overlap)), up, 0, 0, 0};
    a.blend = static_cast<long long>(extent * up * overlap);
    a.keep = extent * up - a.blend;
    a.tiles = a.stride > 0 ? (latent + a.stride - 1) / a.stride : 0;
    return a;
}

// Linear interpolation source of output index o (align_corners = False, scale factor `up`).
void source(long long o, long long up, long long n, long long& i0, long long& i1, float& l1) {
    float s = (1.f / up) * (o + 0.5f) - 0.5f;
    s = std::max(s, 0.f);
    i0 = static_cast<long long>(s);
    i1 = i0 < n - 1 ? i0 + 1 : i0;
    l1 = s - i0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& z = ctx.input(0);
    if (z.dtype != pkbw::DType::BF16 || ctx.output(0).dtype != pkbw::DType::BF16)
        return ctx.fail("this sample expects a bf16 latent and video");
    const long long up_s =
        static_cast<long long>(ctx.param("spatial_upsample", 8) * ctx.param("sr_ratio", 1));
    const double so = ctx.param("spatial_tile_overlap_factor", 0.25);
    const Axis ax[3] = {
        make_axis(z.shape[2],
                  static_cast<long long>(ctx.param("tile_latent_min_length", 3) +
                                         ctx.param("first_frame_as_image", 0)),
                  ctx.param("temporal_tile_overlap_factor", 0.0),
                  static_cast<long long>(ctx.param("temporal_upsample", 4))),
        make_axis(z.shape[3], static_cast<long long>(ctx.param("tile_latent_min_height", 32)), so, up_s),
        make_axis(z.shape[4], static_cast<long long>(ctx.param("tile_latent_min_width", 32)), so, up_s)};
    if (ax[0].tiles == 0 || ax[1].tiles == 0 || ax[2].tiles == 0)
        return ctx.fail("tile overlap factors must leave a positive stride");
    const long long n_tiles = ax[0].tiles * ax[1].tiles * ax[2].tiles, channels = z.shape[1];
    const long long out_c = ctx.output(0).shape[1];
    auto coords = [&](long long t, long long c[3]) {
        c[2] = t % ax[2].tiles;
        c[1] = (t / ax[2].tiles) % ax[1].tiles;
        c[0] = t / (ax[2].tiles * ax[1].tiles);
    };
    // Slot of every decoded tile in the symmetric buffer, and who decodes it.
    std::vector<long long> slot(n_tiles + 1, 0), numel(n_tiles);
    for (long long t = 0; t < n_tiles; ++t) {
        long long c[3];
        coords(t, c);
        numel[t] = ax[0].size(c[0]) * ax[1].size(c[1]) * ax[2].size(c[2]);
        slot[t + 1] = slot[t] + out_c * ax[0].decoded(c[0]) * ax[1].decoded(c[1]) * ax[2].decoded(c[2]);
    }
    std::vector<long long> order(n_tiles);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](long long a, long long b) { return numel[a] > numel[b]; });
    std::vector<int> owner(n_tiles);
    for (long long k = 0; k < n_tiles; ++k)
        owner[order[k]] = static_cast<int>(k % ctx.world_size);

    const pkbw::SymmetricMemory buf = ctx.symmetric("vae78_tiles", slot[n_tiles] * sizeof(std::uint16_t));
    const std::uint16_t* zs = static_cast<const std::uint16_t*>(z.data);
    for (long long t = 0; t < n_tiles; ++t) {
        if (owner[t] != ctx.rank)
            continue;
        long long c[3];
        coords(t, c);
        const long long dt = ax[0].decoded(c[0]), dh = ax[1].decoded(c[1]), dw = ax[2].decoded(c[2]);
        std::uint16_t* dst = static_cast<std::uint16_t*>(buf.local) + slot[t];
        for (long long ch = 0; ch < out_c; ++ch)
            for (long long a = 0; a < dt; ++a)
                for (long long b = 0; b < dh; ++b)
                    for (long long e = 0; e < dw; ++e) {
                        long long t0, t1, h0, h1, w0, w1;
                        float lt, lh, lw;
                        source(a, ax[0].up, ax[0].size(c[0]), t0, t1, lt);
                        source(b, ax[1].up, ax[1].size(c[1]), h0, h1, lh);
                        source(e, ax[2].up, ax[2].size(c[2]), w0, w1, lw);
                        auto at = [&](long long i, long long j, long long k) {
                            const long long ti = ax[0].start(c[0]) + i, hi = ax[1].start(c[1]) + j,
                                            wi = ax[2].start(c[2]) + k;
                            return bf16_to_float(
                                zs[(((ch % channels) * z.shape[2] + ti) * z.shape[3] + hi) * z.shape[4] +
                                   wi]);
                        };
                        const float v =
                            (1 - lt) * ((1 - lh) * ((1 - lw) * at(t0, h0, w0) + lw * at(t0, h0, w1)) +
                                        lh * ((1 - lw) * at(t0, h1, w0) + lw * at(t0, h1, w1))) +
                            lt * ((1 - lh) * ((1 - lw) * at(t1, h0, w0) + lw * at(t1, h0, w1)) +
                                  lh * ((1 - lw) * at(t1, h1, w0) + lw * at(t1, h1, w1)));
                        dst[((ch * dt + a) * dh + b) * dw + e] = float_to_bf16(v);
                    }
    }
    ctx.barrier();

    const long long ot = ax[0].offset(ax[0].tiles), oh = ax[1].offset(ax[1].tiles),
                    ow = ax[2].offset(ax[2].tiles);
    std::uint16_t* video = static_cast<std::uint16_t*>(ctx.output(0).data);
    // Decoded value of tile t at (ch, a, b, e), read from its owner.
    auto decoded = [&](long long t, long long ch, long long a, long long b, long long e) {
        long long c[3];
        coords(t, c);
        const long long dt = ax[0].decoded(c[0]), dh = ax[1].decoded(c[1]), dw = ax[2].decoded(c[2]);
        const std::uint16_t* src = static_cast<const std::uint16_t*>(buf.peers[owner[t]]) + slot[t];
        return bf16_to_float(src[((ch * dt + a) * dh + b) * dw + e]);
    };
    for (long long t = 0; t < n_tiles; ++t) {
        long long c[3];
        coords(t, c);
        for (long long ch = 0; ch < out_c; ++ch)
            for (long long a = 0; a < ax[0].kept(c[0]); ++a)
                for (long long b = 0; b < ax[1].kept(c[1]); ++b)
                    for (long long e = 0; e < ax[2].kept(c[2]); ++e) {
                        float v = decoded(t, ch, a, b, e);
                        const long long pos[3] = {a, b, e};
                        for (int axis = 0; axis < 3; ++axis) {
                            if (c[axis] == 0)
                                continue;
                            const long long extent = std::min(
                                {ax[axis].decoded(c[axis] - 1), ax[axis].decoded(c[axis]), ax[axis].blend});
                            if (pos[axis] >= extent)
                                continue;
                            long long prev[3] = {c[0], c[1], c[2]}, at[3] = {a, b, e};
                            --prev[axis];
                            at[axis] = ax[axis].decoded(prev[axis]) - extent + pos[axis];
                            const long long pt = (prev[0] * ax[1].tiles + prev[1]) * ax[2].tiles + prev[2];
                            const double ratio = static_cast<double>(pos[axis]) / extent;
                            const float keep_prev =
                                round_bf16(decoded(pt, ch, at[0], at[1], at[2]) * float(1.0 - ratio));
                            v = round_bf16(keep_prev + round_bf16(v * float(ratio)));
                        }
                        const long long o =
                            ((ch * ot + ax[0].offset(c[0]) + a) * oh + ax[1].offset(c[1]) + b) * ow +
                            ax[2].offset(c[2]) + e;
                        video[o] = float_to_bf16(v);
                    }
    }
    ctx.barrier(); // peers may still read this rank's tiles
    return 0;
}
