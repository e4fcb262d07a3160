// The tile plan of MAGI-1's tile-parallel VAE decode (78), for the descriptor, the reference and the
// oracle: how PKB cuts the latent [B, C, T, H, W] into overlapping tiles, how large each decoded tile
// is, how much of it is blended with its predecessor along each axis and how much is kept, where the
// kept part lands in the output, and which rank decodes which tile. Axis 0 is time, 1 height, 2 width.
//
// PKB (reference/78_magi1_tile_parallel_vae_decode.py): tile extents (min_length + first_frame_as_image,
// min_height, min_width), strides int(extent · (1 − overlap)) (temporal overlap on axis 0, spatial on
// 1 and 2), upsampling (temporal, spatial · sr_ratio); decoded extent = real = extent · up, blend =
// int(real · overlap), keep = real − blend; tiles per axis ceil(latent / stride), tile i starting at
// i · stride and clipped at the latent's end (so the last ones can be shorter, and decode shorter).
// Tile numbers are row-major over (t, h, w). Dealing: tiles sorted by latent numel, largest first
// (Python's stable sort: equal sizes keep tile order), rank r takes sorted[r::W].
#pragma once

#include "pkbw/toolkit/trilinear.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

namespace pkbw::tk {

struct TilePlan {
    long long latent[3] = {0, 0, 0}; // T, H, W of the latent
    long long extent[3] = {0, 0, 0}; // latent tile extent
    long long stride[3] = {0, 0, 0};
    long long up[3] = {1, 1, 1};    // upsampling factor
    long long blend[3] = {0, 0, 0}; // PKB's blend_t/h/w (before clipping to the tiles' sizes)
    long long keep[3] = {0, 0, 0};
    long long tiles[3] = {0, 0, 0};

    PKBW_TRILINEAR_FN long long count() const { return tiles[0] * tiles[1] * tiles[2]; }
    PKBW_TRILINEAR_FN long long index(long long t, long long h, long long w) const {
        return (t * tiles[1] + h) * tiles[2] + w;
    }
    PKBW_TRILINEAR_FN long long coord(long long tile, int axis) const {
        return axis == 2   ? tile % tiles[2]
               : axis == 1 ? (tile / tiles[2]) % tiles[1]
                           : tile / (tiles[2] * tiles[1]);
    }
    PKBW_TRILINEAR_FN long long start(int axis, long long i) const { return i * stride[axis]; }
    // Latent samples of tile i along the axis (clipped at the latent's end) and what it decodes to.
    PKBW_TRILINEAR_FN long long latent_extent(int axis, long long i) const {
        const long long left = latent[axis] - start(axis, i);
        return left < extent[axis] ? left : extent[axis];
    }
    PKBW_TRILINEAR_FN long long decoded(int axis, long long i) const {
        return latent_extent(axis, i) * up[axis];
    }
    PKBW_TRILINEAR_FN long long kept(int axis, long long i) const {
        const long long d = decoded(axis, i);
        return d < keep[axis] ? d : keep[axis];
    }
    // The overlap tile i (> 0) blends with tile i − 1: PKB's min(prev, cur, blend).
    PKBW_TRILINEAR_FN long long overlap(int axis, long long i) const {
        long long e = blend[axis];
        e = decoded(axis, i - 1) < e ? decoded(axis, i - 1) : e;
        return decoded(axis, i) < e ? decoded(axis, i) : e;
    }
    PKBW_TRILINEAR_FN long long out_offset(int axis, long long i) const {
        long long offset = 0;
        for (long long j = 0; j < i; ++j)
            offset += kept(axis, j);
        return offset;
    }
    PKBW_TRILINEAR_FN long long out_extent(int axis) const { return out_offset(axis, tiles[axis]); }
};

struct TiledDecodeArgs {
    long long min_length = 0, min_height = 0, min_width = 0;
    double spatial_overlap = 0, temporal_overlap = 0;
    long long spatial_upsample = 1, temporal_upsample = 1, sr_ratio = 1;
    bool first_frame_as_image = false;
};

// PKB's arguments as a solution reads them (ctx.param by PKB's names; the defaults are PKB's values).
template <class Context>
TiledDecodeArgs tiled_decode_args(const Context& ctx) {
    TiledDecodeArgs a;
    a.min_length = static_cast<long long>(ctx.param("tile_latent_min_length", 3));
    a.min_height = static_cast<long long>(ctx.param("tile_latent_min_height", 32));
    a.min_width = static_cast<long long>(ctx.param("tile_latent_min_width", 32));
    a.spatial_overlap = ctx.param("spatial_tile_overlap_factor", 0.25);
    a.temporal_overlap = ctx.param("temporal_tile_overlap_factor", 0.0);
    a.spatial_upsample = static_cast<long long>(ctx.param("spatial_upsample", 8));
    a.temporal_upsample = static_cast<long long>(ctx.param("temporal_upsample", 4));
    a.sr_ratio = static_cast<long long>(ctx.param("sr_ratio", 1));
    a.first_frame_as_image = ctx.param("first_frame_as_image", 0) != 0;
    return a;
}

// PKB's plan for a latent of T x H x W; `error` is empty, or says why there is none (PKB raises when a
// stride is 0).
inline TilePlan make_tile_plan(long long t, long long h, long long w, const TiledDecodeArgs& a,
                               std::string& error) {
    TilePlan p;
    const long long latent[3] = {t, h, w};
    const long long extent[3] = {a.min_length + (a.first_frame_as_image ? 1 : 0), a.min_height, a.min_width};
    const long long up[3] = {a.temporal_upsample, a.spatial_upsample * a.sr_ratio,
                             a.spatial_upsample * a.sr_ratio};
    const double overlap[3] = {a.temporal_overlap, a.spatial_overlap, a.spatial_overlap};
    error.clear();
    for (int axis = 0; axis < 3; ++axis) {
        p.latent[axis] = latent[axis];
        p.extent[axis] = extent[axis];
        p.up[axis] = up[axis];
        p.stride[axis] = static_cast<long long>(static_cast<double>(extent[axis]) * (1.0 - overlap[axis]));
        const long long real = extent[axis] * up[axis];
        p.blend[axis] = static_cast<long long>(static_cast<double>(real) * overlap[axis]);
        p.keep[axis] = real - p.blend[axis];
        if (p.stride[axis] <= 0 || latent[axis] <= 0 || up[axis] <= 0) {
            error = "tile overlap factors must leave a positive stride, and the latent and the upsampling "
                    "must be positive";
            return p;
        }
        p.tiles[axis] = (latent[axis] + p.stride[axis] - 1) / p.stride[axis];
    }
    return p;
}

// owner[tile] = the rank that decodes it (PKB's _split_tiles).
inline std::vector<int> deal_tiles(const TilePlan& p, int world) {
    const long long n = p.count();
    std::vector<long long> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    auto numel = [&](long long tile) {
        long long v = 1;
        for (int axis = 0; axis < 3; ++axis)
            v *= p.latent_extent(axis, p.coord(tile, axis));
        return v;
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](long long a, long long b) { return numel(a) > numel(b); });
    std::vector<int> owner(static_cast<std::size_t>(n));
    for (long long k = 0; k < n; ++k)
        owner[order[k]] = static_cast<int>(k % world);
    return owner;
}

} // namespace pkbw::tk
