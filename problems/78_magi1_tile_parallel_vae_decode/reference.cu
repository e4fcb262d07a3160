// Reference for PKB problem 78. Every output element of the video depends only on the tile it lands in
// and on up to three predecessor tiles, and a decoded tile only on its owner's latent, so instead of
// PKB's two gathers of decoded and blended tiles this gathers the latents' first three channels once
// (ncclAllGather) and computes each output element in one kernel: the tile's trilinear value (fp32,
// rounded to bf16) from its owner's latent, then PKB's bf16 blends along t, h and w with the
// predecessors' unblended decoded values (toolkit trilinear.h, tiled_decode.h for PKB's tile plan and
// dealing). The oracle follows PKB's structure instead (whole tiles, blends in place, crops).
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/tiled_decode.h"
#include "pkbw/toolkit/types.cuh"

#include <cuda_bf16.h>
#include <string>
#include <vector>

namespace {

namespace tk = pkbw::tk;
using bf16 = __nv_bfloat16;

struct Latents {
    const bf16* all;    // [W, used, T, H, W]: every rank's first `used` channels
    const int* owner;   // [tiles]
    long long channels; // of the latent (output channel c reads channel c % channels)
    long long used;     // channels gathered per rank
};

// Tile `tile`'s decoded value at (c, t, h, w), rounded to bf16 (PKB's decoded tile).
__device__ float decoded(const tk::TilePlan& p, const Latents& z, long long tile, long long c, long long t,
                         long long h, long long w) {
    const long long ti = p.coord(tile, 0), hi = p.coord(tile, 1), wi = p.coord(tile, 2);
    const long long et = p.latent_extent(0, ti), eh = p.latent_extent(1, hi), ew = p.latent_extent(2, wi);
    const bf16* volume = z.all + ((z.owner[tile] * z.used + c % z.channels) * p.latent[0] + p.start(0, ti)) *
                                     p.latent[1] * p.latent[2];
    const long long row = p.latent[2], plane = p.latent[1] * p.latent[2];
    const long long h0 = p.start(1, hi), w0 = p.start(2, wi);
    auto at = [&](long long a, long long b, long long d) {
        return __bfloat162float(volume[a * plane + (h0 + b) * row + w0 + d]);
    };
    const float v = tk::trilinear(at, tk::linear_tap(t, 1.f / p.up[0], et),
                                  tk::linear_tap(h, 1.f / p.up[1], eh), tk::linear_tap(w, 1.f / p.up[2], ew));
    return tk::round_to_bf16(v);
}

// The tile index along `axis` that output position `o` falls in, and o's position inside it.
__device__ long long locate(const tk::TilePlan& p, int axis, long long o, long long& local) {
    long long i = 0, offset = 0;
    while (i + 1 < p.tiles[axis] && o >= offset + p.kept(axis, i))
        offset += p.kept(axis, i++);
    local = o - offset;
    return i;
}

__global__ void decode_blend(tk::TilePlan p, Latents z, long long out_channels, bf16* video) {
    const long long ot = p.out_extent(0), oh = p.out_extent(1), ow = p.out_extent(2);
    const long long total = out_channels * ot * oh * ow;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP) {
        const long long c = i / (ot * oh * ow);
        long long local[3];
        const long long idx[3] = {locate(p, 0, (i / (oh * ow)) % ot, local[0]),
                                  locate(p, 1, (i / ow) % oh, local[1]), locate(p, 2, i % ow, local[2])};
        const long long tile = p.index(idx[0], idx[1], idx[2]);
        float v = decoded(p, z, tile, c, local[0], local[1], local[2]);
        for (int axis = 0; axis < 3; ++axis) { // t, then h, then w, each on the previous blend's result
            if (idx[axis] == 0)
                continue;
            const long long extent = p.overlap(axis, idx[axis]);
            if (local[axis] >= extent)
                continue;
            long long prev_idx[3] = {idx[0], idx[1], idx[2]}, at[3] = {local[0], local[1], local[2]};
            --prev_idx[axis];
            at[axis] = p.decoded(axis, prev_idx[axis]) - extent + local[axis];
            const float prev =
                decoded(p, z, p.index(prev_idx[0], prev_idx[1], prev_idx[2]), c, at[0], at[1], at[2]);
            v = tk::blend_bf16(prev, v, local[axis], extent);
        }
        video[i] = __float2bfloat16(v);
    }
}

int plan_from_params(const pkbw::Context& ctx, tk::TilePlan& plan) {
    const pkbw::TensorView& z = ctx.input(0);
    std::string error;
    plan = tk::make_tile_plan(z.shape[2], z.shape[3], z.shape[4], tk::tiled_decode_args(ctx), error);
    return error.empty() ? 0 : ctx.fail(("78 reference: " + error).c_str());
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& z = ctx.input(0);
    if (z.dtype != pkbw::DType::BF16 || z.ndim != 5 || z.shape[0] != 1)
        return ctx.fail("78 reference: z must be bf16 [1, C, T, H, W]");
    tk::TilePlan plan;
    PKBW_TRY(plan_from_params(ctx, plan));
    const int world = ctx.world_size;
    const pkbw::TensorView& out = ctx.output(0);
    Latents lat;
    lat.channels = z.shape[1];
    lat.used = lat.channels < out.shape[1] ? lat.channels : out.shape[1];
    // The first `used` channels are a contiguous prefix of z [1, C, T, H, W].
    const std::size_t bytes =
        static_cast<std::size_t>(lat.used * z.shape[2] * z.shape[3] * z.shape[4]) * sizeof(bf16);
    bf16* all = static_cast<bf16*>(ctx.scratch("vae78_latents", bytes * world));
    PKBW_CHECK(ctx, ncclAllGather(z.data, all, bytes, ncclUint8, ctx.nccl(), ctx.stream()));
    const std::vector<int> owner = tk::deal_tiles(plan, world);
    // From pageable memory: cudaMemcpyAsync returns once `owner` is staged, so it may go out of scope. A
    // CUDA graph would replay the copy from that freed memory, so the graph figure refuses this call
    // (docs/perf.md) and 78's headline is the launched figure, as its 1.7 ms calls make it anyway; a
    // cache of the upload would buy the graph's secondary figure with state in the ground truth.
    int* owner_dev = static_cast<int*>(ctx.scratch("vae78_owner", owner.size() * sizeof(int)));
    PKBW_CHECK(ctx, cudaMemcpyAsync(owner_dev, owner.data(), owner.size() * sizeof(int),
                                    cudaMemcpyHostToDevice, ctx.stream()));
    lat.all = all;
    lat.owner = owner_dev;
    const long long total = out.numel();
    decode_blend<<<tk::grid_for(total), 256, 0, ctx.stream()>>>(plan, lat, out.shape[1], out.as<bf16>());
    PKBW_CHECK(ctx, cudaGetLastError());
    return tk::finish(ctx);
}
