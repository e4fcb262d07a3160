// Reference for PKB problem 61: n and the cameras gathered on the host (tk::gather_counts and
// ctx.all_gather_host of each rank's viewmat and K; the camera terms by tk::gsplat_camera), a kernel for
// the local covariances, a kernel projecting every (camera, gaussian) pair with the toolkit's bf16
// op-by-op geometry (gsplat_geometry.h, torch's fp32 opmath), the visible pairs compacted in torch.where's
// order by an exclusive scan of their flags (tk::exclusive_scan) and a scatter, the per-owner counts
// exchanged (tk::exchange_counts), one tk::all_to_all_v of the 64-byte records, and a kernel unpacking
// the received records into the eight outputs; K is every output's length.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/gsplat_geometry.h"
#include "pkbw/toolkit/sort.cuh"

#include <cuda_bf16.h>
#include <vector>

namespace {

namespace tk = pkbw::tk;
using Camera = tk::GsplatCamera<float>;

__device__ float load_bf16(const void* data, long long i) {
    return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
}

__global__ void covariance_kernel(const void* quats, const void* scales, long long n, float* covs) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        float q[4], s[3];
        for (int j = 0; j < 4; ++j)
            q[j] = load_bf16(quats, i * 4 + j);
        for (int j = 0; j < 3; ++j)
            s[j] = load_bf16(scales, i * 3 + j);
        tk::gsplat_covariance(q, s, covs + i * 9);
    }
}

// Pair t = camera · n + gaussian (torch.where's order): its record and whether it is packed. flags has
// one more entry, 0, so that the exclusive scan ends with the total.
struct PairArgs {
    const void *means, *opacities, *colors;
    const float* covs;
    const Camera* cameras;
    long long n, pairs, first_gaussian[pkbw::kMaxRanks + 1];
    int cameras_per_rank;
};
__global__ void project_kernel(PairArgs a, tk::GsplatRecord* records, long long* flags) {
    for (long long t = PKBW_GRID_STRIDE_BEGIN; t <= a.pairs; t += PKBW_GRID_STRIDE_STEP) {
        if (t == a.pairs) {
            flags[t] = 0;
            continue;
        }
        const long long camera = t / a.n, i = t % a.n;
        float mean[3], opacity = load_bf16(a.opacities, i), colors[tk::kGsplatChannels];
        for (int j = 0; j < 3; ++j)
            mean[j] = load_bf16(a.means, i * 3 + j);
        for (int j = 0; j < tk::kGsplatChannels; ++j)
            colors[j] = load_bf16(a.colors, i * tk::kGsplatChannels + j);
        const tk::GsplatProjection<float> p = tk::gsplat_project(mean, a.covs + i * 9, a.cameras[camera]);
        const int owner = static_cast<int>(camera / a.cameras_per_rank);
        records[t] =
            tk::gsplat_record(p, camera % a.cameras_per_rank, i + a.first_gaussian[owner], &opacity, colors);
        flags[t] = p.visible() ? 1 : 0;
    }
}

__global__ void compact_kernel(const tk::GsplatRecord* records, const long long* flags, const long long* at,
                               long long pairs, tk::GsplatRecord* packed) {
    for (long long t = PKBW_GRID_STRIDE_BEGIN; t < pairs; t += PKBW_GRID_STRIDE_STEP)
        if (flags[t])
            packed[at[t]] = records[t];
}

// The scan at each camera owner's first pair (and the end): the per-owner counts' prefix.
__global__ void owner_bounds_kernel(const long long* at, long long pairs_per_owner, int owners,
                                    long long* bounds) {
    const int o = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (o <= owners)
        bounds[o] = at[o * pairs_per_owner];
}

struct Outputs {
    long long *camera, *gaussian;
    int* radius;
    __nv_bfloat16* values[5]; // means2d, depths, conics, opacities, colors
};
__global__ void unpack_kernel(const tk::GsplatRecord* recv, long long k, Outputs out) {
    const int widths[5] = {2, 1, 3, 1, 3};
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < k; i += PKBW_GRID_STRIDE_STEP) {
        const tk::GsplatRecord& rec = recv[i];
        out.camera[i] = rec.camera;
        out.gaussian[i] = rec.gaussian;
        out.radius[2 * i] = rec.radius[0];
        out.radius[2 * i + 1] = rec.radius[1];
        for (int o = 0, at = 0; o < 5; at += widths[o], ++o)
            for (int j = 0; j < widths[o]; ++j)
                out.values[o][i * widths[o] + j] = __float2bfloat16_rn(rec.values[at + j]);
    }
}

// Every rank's cameras (viewmat, K as floats) through the host, with PKB's per-camera terms.
int gathered_cameras(const pkbw::Context& ctx, const tk::GsplatView& view, long long per_rank,
                     std::vector<Camera>& cameras) {
    std::vector<__nv_bfloat16> vm(static_cast<std::size_t>(per_rank) * 16),
        ks(static_cast<std::size_t>(per_rank) * 9);
    PKBW_CHECK(ctx, cudaMemcpyAsync(vm.data(), ctx.input(5).data, ctx.input(5).nbytes(),
                                    cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaMemcpyAsync(ks.data(), ctx.input(6).data, ctx.input(6).nbytes(),
                                    cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    std::vector<float> mine(static_cast<std::size_t>(per_rank) * 25);
    for (long long c = 0; c < per_rank; ++c) {
        for (int j = 0; j < 16; ++j)
            mine[c * 25 + j] = __bfloat162float(vm[c * 16 + j]);
        for (int j = 0; j < 9; ++j)
            mine[c * 25 + 16 + j] = __bfloat162float(ks[c * 9 + j]);
    }
    std::vector<float> all(mine.size() * static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(mine.data(), mine.size() * sizeof(float), all.data());
    cameras.clear();
    for (std::size_t c = 0; c < all.size() / 25; ++c)
        cameras.push_back(tk::gsplat_camera(view, &all[c * 25], &all[c * 25 + 16]));
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int world = ctx.world_size;
    const long long n = ctx.input(0).shape[0], per_rank = ctx.input(5).shape[0];
    const tk::GsplatView view{static_cast<long long>(ctx.param("image_width")),
                              static_cast<long long>(ctx.param("image_height")), ctx.param("eps2d", 0.3),
                              ctx.param("near_plane", 0.01), ctx.param("far_plane", 1e10)};
    const std::vector<long long> n_world = tk::gather_counts(ctx, n);
    std::vector<Camera> cameras;
    PKBW_TRY(gathered_cameras(ctx, view, per_rank, cameras));
    const long long pairs = n * static_cast<long long>(cameras.size());

    auto* covs = static_cast<float*>(ctx.scratch("gsplat61_covs", sizeof(float) * 9 * (n > 0 ? n : 1)));
    auto* cams = static_cast<Camera*>(ctx.scratch("gsplat61_cameras", sizeof(Camera) * cameras.size()));
    auto* records = static_cast<tk::GsplatRecord*>(
        ctx.scratch("gsplat61_records", sizeof(tk::GsplatRecord) * (2 * pairs + 1)));
    tk::GsplatRecord* packed = records + pairs;
    auto* flags = static_cast<long long*>(ctx.scratch("gsplat61_flags", sizeof(long long) * 2 * (pairs + 1)));
    long long* at = flags + pairs + 1;
    auto* bounds = static_cast<long long*>(ctx.scratch("gsplat61_bounds", sizeof(long long) * (world + 1)));
    PKBW_CHECK(ctx, cudaMemcpyAsync(cams, cameras.data(), sizeof(Camera) * cameras.size(),
                                    cudaMemcpyHostToDevice, ctx.stream()));

    covariance_kernel<<<tk::grid_for(n), 256, 0, ctx.stream()>>>(ctx.input(1).data, ctx.input(2).data, n,
                                                                 covs);
    PairArgs args{ctx.input(0).data, ctx.input(3).data, ctx.input(4).data, covs, cams, n, pairs, {}, 0};
    args.cameras_per_rank = static_cast<int>(per_rank);
    for (int p = 0; p < world; ++p) // PKB's offset: the sum of n over the ranks before the DESTINATION
        args.first_gaussian[p + 1] = args.first_gaussian[p] + n_world[static_cast<std::size_t>(p)];
    project_kernel<<<tk::grid_for(pairs + 1), 256, 0, ctx.stream()>>>(args, records, flags);
    PKBW_TRY(tk::exclusive_scan(ctx, flags, at, pairs + 1));
    compact_kernel<<<tk::grid_for(pairs), 256, 0, ctx.stream()>>>(records, flags, at, pairs, packed);
    owner_bounds_kernel<<<1, 128, 0, ctx.stream()>>>(at, n * per_rank, world, bounds);
    std::vector<long long> bound(static_cast<std::size_t>(world) + 1),
        send_counts(static_cast<std::size_t>(world));
    PKBW_CHECK(ctx, cudaMemcpyAsync(bound.data(), bounds, sizeof(long long) * (world + 1),
                                    cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    for (int p = 0; p < world; ++p)
        send_counts[static_cast<std::size_t>(p)] = bound[p + 1] - bound[p];

    const std::vector<long long> recv_counts = tk::exchange_counts(ctx, send_counts);
    const long long k = tk::total_of(recv_counts);
    if (k > ctx.output(0).shape[0])
        return ctx.fail("61 reference: more pairs arrive than the outputs' bound");
    auto* recv = static_cast<tk::GsplatRecord*>(
        ctx.scratch("gsplat61_recv", sizeof(tk::GsplatRecord) * (ctx.output(0).shape[0] + 1)));
    if (world == 1) {
        PKBW_CHECK(ctx, cudaMemcpyAsync(recv, packed, sizeof(tk::GsplatRecord) * k, cudaMemcpyDeviceToDevice,
                                        ctx.stream()));
    } else {
        PKBW_TRY(tk::all_to_all_v(ctx, ctx.nccl(), packed, send_counts.data(), recv, recv_counts.data(),
                                  sizeof(tk::GsplatRecord)));
    }
    Outputs out{static_cast<long long*>(ctx.output(0).data),
                static_cast<long long*>(ctx.output(1).data),
                static_cast<int*>(ctx.output(2).data),
                {}};
    for (int o = 0; o < 5; ++o)
        out.values[o] = static_cast<__nv_bfloat16*>(ctx.output(3 + o).data);
    if (k > 0)
        unpack_kernel<<<tk::grid_for(k), 256, 0, ctx.stream()>>>(recv, k, out);
    PKBW_TRY(tk::finish(ctx));
    return tk::set_output_lengths(ctx, k);
}
