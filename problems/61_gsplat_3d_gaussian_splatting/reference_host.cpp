// Host oracle for PKB problem 61, in PKB's structure: n gathered (N_world), the cameras gathered, the
// local covariances, every (camera, gaussian) pair projected with the toolkit's bf16 op-by-op geometry
// in torch's fp32 opmath (gsplat_geometry.h, the arithmetic the CUDA reference runs too), the visible
// pairs packed by owner with PKB's id rewrites (gsplat_geometry_host.h), one tk::all_to_all_v_host of
// the packed rows, and K, what arrives, reported as every output's length.
#include "pkbw/solution.h"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/gsplat_geometry_host.h"
#include "pkbw/toolkit/host.h"

#include <cstring>
#include <vector>

namespace {

namespace tk = pkbw::tk;

std::vector<float> as_float(const pkbw::TensorView& t) {
    const std::vector<double> v = tk::to_f64(t);
    return std::vector<float>(v.begin(), v.end());
}

// Every rank's cameras (viewmat 16 values then K 9 values each), PKB's _all_gather_tensor_list.
std::vector<tk::GsplatCamera<float>> gathered_cameras(const pkbw::Context& ctx, const tk::GsplatView& view,
                                                      long long per_rank) {
    const std::vector<float> viewmats = as_float(ctx.input(5)), ks = as_float(ctx.input(6));
    std::vector<float> mine(static_cast<std::size_t>(per_rank) * 25);
    for (long long c = 0; c < per_rank; ++c) {
        std::memcpy(&mine[c * 25], &viewmats[c * 16], 16 * sizeof(float));
        std::memcpy(&mine[c * 25 + 16], &ks[c * 9], 9 * sizeof(float));
    }
    std::vector<float> all(mine.size() * static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(mine.data(), mine.size() * sizeof(float), all.data());
    std::vector<tk::GsplatCamera<float>> cameras;
    for (std::size_t c = 0; c < all.size() / 25; ++c)
        cameras.push_back(tk::gsplat_camera(view, &all[c * 25], &all[c * 25 + 16]));
    return cameras;
}

void store_row(const pkbw::Context& ctx, long long k, const tk::GsplatRecord& rec) {
    ctx.output(0).as<long long>()[k] = rec.camera;
    ctx.output(1).as<long long>()[k] = rec.gaussian;
    ctx.output(2).as<int>()[2 * k] = rec.radius[0];
    ctx.output(2).as<int>()[2 * k + 1] = rec.radius[1];
    const int widths[5] = {2, 1, 3, 1, 3}; // means2d, depths, conics, opacities, colors
    int at = 0;
    for (int o = 0; o < 5; ++o) {
        for (int j = 0; j < widths[o]; ++j)
            tk::store(ctx.output(3 + o), k * widths[o] + j, rec.values[at + j]);
        at += widths[o];
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const long long n = ctx.input(0).shape[0];
    const long long cameras_per_rank = ctx.input(5).shape[0];
    const tk::GsplatView view{static_cast<long long>(ctx.param("image_width")),
                              static_cast<long long>(ctx.param("image_height")), ctx.param("eps2d", 0.3),
                              ctx.param("near_plane", 0.01), ctx.param("far_plane", 1e10)};
    const std::vector<long long> n_world = tk::gather_counts(ctx, n);
    const std::vector<tk::GsplatCamera<float>> cameras = gathered_cameras(ctx, view, cameras_per_rank);

    const std::vector<float> covs = tk::gsplat_covariances(as_float(ctx.input(1)), as_float(ctx.input(2)), n);
    const tk::GsplatPacked packed =
        tk::gsplat_pack_host(cameras, static_cast<int>(cameras_per_rank), as_float(ctx.input(0)), covs,
                             as_float(ctx.input(3)), as_float(ctx.input(4)), n_world);
    const std::vector<std::byte> recv =
        tk::all_to_all_v_host(ctx, packed.records.data(), packed.counts, sizeof(tk::GsplatRecord));
    const long long k = static_cast<long long>(recv.size() / sizeof(tk::GsplatRecord));
    if (k > ctx.output(0).shape[0])
        return ctx.fail("61 oracle: more pairs arrive than the outputs' bound");
    for (long long i = 0; i < k; ++i) {
        tk::GsplatRecord rec;
        std::memcpy(&rec, recv.data() + i * sizeof rec, sizeof rec);
        store_row(ctx, i, rec);
    }
    return tk::set_output_lengths(ctx, k);
}
