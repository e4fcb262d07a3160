// Host oracle for PKB problem 78, in PKB's structure: every rank's latent gathered (first three
// channels), every tile decoded whole from its owner's latent (trilinear upsampling in fp32 as torch's
// kernel, rounded to bf16), each tile cloned and blended in place with its predecessors' decoded tiles
// along t, then h, then w (PKB's _blend_t/_h/_w loops, bf16 arithmetic), cropped to its kept part and
// placed in the video. Shares the tile plan and the scalar arithmetic with the reference (toolkit
// tiled_decode.h, trilinear.h), not its per-element traversal.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/tiled_decode.h"

#include <algorithm>
#include <string>
#include <vector>

namespace {

namespace tk = pkbw::tk;

// A decoded tile [channels, d0, d1, d2] of bf16 values held as float.
struct Volume {
    long long channels = 0, d[3] = {0, 0, 0};
    std::vector<float> v;
    float& at(long long c, long long a, long long b, long long e) {
        return v[((c * d[0] + a) * d[1] + b) * d[2] + e];
    }
    float at(long long c, long long a, long long b, long long e) const {
        return v[((c * d[0] + a) * d[1] + b) * d[2] + e];
    }
};

// PKB's _decode_tile on tile `tile` of `latent` [used, T, H, W] (the owner's first channels).
Volume decode_tile(const tk::TilePlan& p, long long tile, const float* latent, long long channels,
                   long long out_c) {
    Volume out;
    out.channels = out_c;
    long long origin[3], extent[3];
    for (int axis = 0; axis < 3; ++axis) {
        const long long i = p.coord(tile, axis);
        origin[axis] = p.start(axis, i);
        extent[axis] = p.latent_extent(axis, i);
        out.d[axis] = p.decoded(axis, i);
    }
    out.v.resize(static_cast<std::size_t>(out_c * out.d[0] * out.d[1] * out.d[2]));
    for (long long c = 0; c < out_c; ++c) {
        const float* volume = latent + (c % channels) * p.latent[0] * p.latent[1] * p.latent[2];
        auto at = [&](long long a, long long b, long long e) {
            return volume[((origin[0] + a) * p.latent[1] + origin[1] + b) * p.latent[2] + origin[2] + e];
        };
        for (long long a = 0; a < out.d[0]; ++a)
            for (long long b = 0; b < out.d[1]; ++b)
                for (long long e = 0; e < out.d[2]; ++e)
                    out.at(c, a, b, e) =
                        tk::round_to_bf16(tk::trilinear(at, tk::linear_tap(a, 1.f / p.up[0], extent[0]),
                                                        tk::linear_tap(b, 1.f / p.up[1], extent[1]),
                                                        tk::linear_tap(e, 1.f / p.up[2], extent[2])));
    }
    return out;
}

// PKB's _blend_{t,h,w}: cur[.., idx, ..] = prev[.., -extent + idx, ..] * (1 - idx/extent) + cur * idx/extent.
void blend(const Volume& prev, Volume& cur, int axis, long long extent) {
    extent = std::min({prev.d[axis], cur.d[axis], extent});
    for (long long c = 0; c < cur.channels; ++c)
        for (long long a = 0; a < cur.d[0]; ++a)
            for (long long b = 0; b < cur.d[1]; ++b)
                for (long long e = 0; e < cur.d[2]; ++e) {
                    const long long pos[3] = {a, b, e};
                    if (pos[axis] >= extent)
                        continue;
                    long long from[3] = {a, b, e};
                    from[axis] = prev.d[axis] - extent + pos[axis];
                    cur.at(c, a, b, e) = tk::blend_bf16(prev.at(c, from[0], from[1], from[2]),
                                                        cur.at(c, a, b, e), pos[axis], extent);
                }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& z = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    std::string error;
    const tk::TilePlan p =
        tk::make_tile_plan(z.shape[2], z.shape[3], z.shape[4], tk::tiled_decode_args(ctx), error);
    if (!error.empty())
        return ctx.fail(("78 oracle: " + error).c_str());
    const long long channels = z.shape[1], out_c = out.shape[1], used = std::min(channels, out_c);
    const long long volume = p.latent[0] * p.latent[1] * p.latent[2];
    const std::vector<double> mine = tk::to_f64(z.data, z.dtype, used * volume);
    const std::vector<double> gathered = tk::all_gather_f64(ctx, mine);
    const std::vector<float> all(gathered.begin(), gathered.end()); // bf16 values, exact in float
    const std::vector<int> owner = tk::deal_tiles(p, ctx.world_size);
    std::vector<Volume> decoded;
    for (long long tile = 0; tile < p.count(); ++tile)
        decoded.push_back(decode_tile(p, tile, all.data() + owner[tile] * used * volume, used, out_c));

    const long long ot = p.out_extent(0), oh = p.out_extent(1), ow = p.out_extent(2);
    std::vector<double> video(static_cast<std::size_t>(out_c * ot * oh * ow));
    for (long long tile = 0; tile < p.count(); ++tile) {
        const long long idx[3] = {p.coord(tile, 0), p.coord(tile, 1), p.coord(tile, 2)};
        Volume cur = decoded[tile];
        for (int axis = 0; axis < 3; ++axis) {
            if (idx[axis] == 0)
                continue;
            long long prev[3] = {idx[0], idx[1], idx[2]};
            --prev[axis];
            blend(decoded[p.index(prev[0], prev[1], prev[2])], cur, axis, p.blend[axis]);
        }
        const long long base[3] = {p.out_offset(0, idx[0]), p.out_offset(1, idx[1]), p.out_offset(2, idx[2])};
        for (long long c = 0; c < out_c; ++c)
            for (long long a = 0; a < p.kept(0, idx[0]); ++a)
                for (long long b = 0; b < p.kept(1, idx[1]); ++b)
                    for (long long e = 0; e < p.kept(2, idx[2]); ++e)
                        video[((c * ot + base[0] + a) * oh + base[1] + b) * ow + base[2] + e] =
                            cur.at(c, a, b, e);
    }
    tk::store_all(out, video);
    return 0;
}
