// Host side of PKB 61's geometry (gsplat_geometry.h, gsplat_geometry_host.h): the double-to-bf16
// rounding, the covariance and projection against hand values and against the same formulas in exact
// double arithmetic, the culling rules, the float path against its float64 twin, and the packing over
// simulated ranks (order, counts, PKB's id rewrites).
#include "pkbw/toolkit/gsplat_geometry_host.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <gtest/gtest.h>
#include <vector>

using namespace pkbw::tk;

namespace {

// A small deterministic generator for scenes (uniform [0, 1) and standard normal).
struct Lcg {
    std::uint64_t state;
    double uniform() {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<double>(state >> 11) * 0x1.0p-53;
    }
    double normal() {
        const double u = uniform() + 1e-12, v = uniform();
        return std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v);
    }
};

float bf(double v) {
    return round_to_bf16(static_cast<float>(v));
}

// PKB's scene in bf16 (means, quats, scales), `wide` spreading it so that pairs get culled.
struct Scene {
    std::vector<float> means, quats, scales, opacities, colors;
};
Scene make_scene(long long n, std::uint64_t seed, bool wide) {
    Lcg g{seed};
    Scene s;
    for (long long i = 0; i < n; ++i) {
        const double spread = wide ? 6.0 : 1.5;
        s.means.push_back(bf((bf(g.uniform()) - 0.5) * spread));
        s.means.push_back(bf((bf(g.uniform()) - 0.5) * spread));
        s.means.push_back(wide ? bf(bf(g.uniform()) * 5 - 1) : bf(bf(g.uniform()) * 2 + 2));
        for (int j = 0; j < 4; ++j)
            s.quats.push_back(bf(g.normal()));
        for (int j = 0; j < 3; ++j)
            s.scales.push_back(bf(bf(g.uniform()) * 0.02f));
        s.opacities.push_back(bf(bf(g.uniform()) * 0.8f + 0.1f));
        for (int j = 0; j < 3; ++j)
            s.colors.push_back(bf(g.uniform()));
    }
    return s;
}

// PKB's camera: identity view, fx = fy = 0.8 min(w, h) and the centre, in bf16.
template <class Real>
GsplatCamera<Real> pkb_camera(long long width, long long height) {
    const Real view[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    const Real focal = bf(0.8 * static_cast<double>(width < height ? width : height));
    const Real k[9] = {focal, 0, bf(0.5 * width), 0, focal, bf(0.5 * height), 0, 0, 1};
    return gsplat_camera(GsplatView{width, height}, view, k);
}

// The same geometry without any rounding: R(q/|q|) diag(s), J at the clamped mean, eps on the diagonal.
struct Exact {
    double cov2d[4], mean2d[2];
};
Exact exact_projection(const float* mean, const float* q, const float* s, double f, double cx, double cy,
                       double lim) {
    const double nq =
        std::sqrt(double(q[0]) * q[0] + double(q[1]) * q[1] + double(q[2]) * q[2] + double(q[3]) * q[3]);
    const double w = q[0] / nq, x = q[1] / nq, y = q[2] / nq, z = q[3] / nq;
    const double rot[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
                           2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                           2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
    double cov[9] = {};
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k)
            for (int j = 0; j < 3; ++j)
                cov[i * 3 + k] += rot[i * 3 + j] * s[j] * rot[k * 3 + j] * s[j];
    const double tz = mean[2];
    const double tx = tz * std::fmin(std::fmax(mean[0] / tz, -lim), lim);
    const double ty = tz * std::fmin(std::fmax(mean[1] / tz, -lim), lim);
    const double jac[6] = {f / tz, 0, -f * tx / (tz * tz), 0, f / tz, -f * ty / (tz * tz)};
    Exact e;
    for (int i = 0; i < 2; ++i)
        for (int l = 0; l < 2; ++l) {
            double acc = 0;
            for (int j = 0; j < 3; ++j)
                for (int k = 0; k < 3; ++k)
                    acc += jac[i * 3 + j] * cov[j * 3 + k] * jac[l * 3 + k];
            e.cov2d[i * 2 + l] = acc + (i == l ? 0.3 : 0.0);
        }
    e.mean2d[0] = f * mean[0] / tz + cx;
    e.mean2d[1] = f * mean[1] / tz + cy;
    return e;
}

} // namespace

TEST(ToolkitGsplat, RoundsDoubleToBf16FromTheExactValue) {
    EXPECT_EQ(round_f64_to_bf16(1.0 + 0x1.0p-8), 1.0);                // a tie: to even
    EXPECT_EQ(round_f64_to_bf16(1.0 + 3 * 0x1.0p-8), 1.0 + 0x1.0p-6); // a tie: to even (up)
    EXPECT_EQ(round_f64_to_bf16(-(1.0 + 0x1.0p-8 + 0x1.0p-40)), -(1.0 + 0x1.0p-7));
    // Through fp32 the 2^-40 is lost and the tie rounds down: the double rounding the twin avoids.
    EXPECT_EQ(round_to_bf16(static_cast<float>(1.0 + 0x1.0p-8 + 0x1.0p-40)), 1.0f);
    EXPECT_EQ(round_f64_to_bf16(1e39), HUGE_VAL);
    EXPECT_TRUE(std::isnan(round_f64_to_bf16(std::nan(""))));
    for (float v : {0.30078125f, -2.5f, 409.6f, 3.33f, 1e-20f})
        EXPECT_EQ(round_f64_to_bf16(v), static_cast<double>(round_to_bf16(v))) << v;
}

TEST(ToolkitGsplat, CovarianceOfAxisAlignedAndRotatedGaussians) {
    const float scale[3] = {0.5f, 0.25f, 0.125f};
    const float identity[4] = {2.0f, 0.0f, 0.0f, 0.0f}; // normalised to (1, 0, 0, 0)
    float cov[9];
    gsplat_covariance(identity, scale, cov);
    EXPECT_EQ(std::vector<float>(cov, cov + 9),
              (std::vector<float>{0.25f, 0, 0, 0, 0.0625f, 0, 0, 0, 0.015625f}));
    // 90 degrees about z swaps the x and y variances (up to the rounding of cos 45 in bf16).
    const float about_z[4] = {bf(std::sqrt(0.5)), 0.0f, 0.0f, bf(std::sqrt(0.5))};
    gsplat_covariance(about_z, scale, cov);
    EXPECT_NEAR(cov[0], 0.0625f, 0.0625f * 0.02f);
    EXPECT_NEAR(cov[4], 0.25f, 0.25f * 0.02f);
    EXPECT_NEAR(cov[8], 0.015625f, 0.015625f * 0.02f);
    EXPECT_NEAR(cov[1], 0.0f, 0.25f * 0.02f);
    EXPECT_EQ(cov[1], cov[3]); // M·M^T is symmetric bit for bit
}

TEST(ToolkitGsplat, ProjectionOfACentredGaussianByHand) {
    const GsplatCamera<float> cam = pkb_camera<float>(512, 512); // fx = bf16(409.6) = 410
    EXPECT_EQ(cam.k[0], 410.0f);
    const float mean[3] = {0.0f, 0.0f, 2.0f}, q[4] = {1, 0, 0, 0}, s[3] = {0.01f, 0.01f, 0.01f};
    float cov[9];
    gsplat_covariance(q, s, cov);
    const GsplatProjection<float> p = gsplat_project(mean, cov, cam);
    EXPECT_EQ(p.mean2d[0], 256.0f);
    EXPECT_EQ(p.mean2d[1], 256.0f);
    EXPECT_EQ(p.depth, 2.0f);
    // cov2d = (205 · 0.01)^2 + 0.3 ≈ 4.5 (in bf16 steps); radius = ceil(3.33 · sqrt(4.5)) = 8.
    EXPECT_EQ(p.radius[0], 8);
    EXPECT_EQ(p.radius[1], 8);
    EXPECT_NEAR(p.conic[0], 1 / 4.5, 0.01);
    EXPECT_EQ(p.conic[1], 0.0f);
    EXPECT_TRUE(p.visible());
}

TEST(ToolkitGsplat, CullsBehindNearOutsideAndKeepsTheClampOutOfMeans2d) {
    const GsplatCamera<float> cam = pkb_camera<float>(512, 512);
    const float q[4] = {1, 0, 0, 0}, s[3] = {0.01f, 0.01f, 0.01f};
    float cov[9];
    gsplat_covariance(q, s, cov);
    const float behind[3] = {0, 0, -1}, too_near[3] = {0, 0, 0.0050048828125f}, aside[3] = {10, 0, 2};
    EXPECT_FALSE(gsplat_project(behind, cov, cam).visible());
    EXPECT_FALSE(gsplat_project(too_near, cov, cam).visible());
    const GsplatProjection<float> p = gsplat_project(aside, cov, cam);
    EXPECT_FALSE(p.visible());
    EXPECT_EQ(p.radius[0], 0);
    EXPECT_NEAR(p.mean2d[0], 256 + 410 * 5, 16); // the unclamped mean, far right of the image
    const float edge[3] = {0.62f, 0, 2};         // just inside: 256 + 410 · 0.31 ≈ 383
    EXPECT_TRUE(gsplat_project(edge, cov, cam).visible());
}

TEST(ToolkitGsplat, BfloatPathTracksTheExactGeometry) {
    const Scene sc = make_scene(4000, 7, false);
    const GsplatCamera<float> cam = pkb_camera<float>(512, 512);
    const std::vector<float> covs = gsplat_covariances(sc.quats, sc.scales, 4000);
    const double lim = 256.0 / 410 * 1.3;
    for (long long i = 0; i < 4000; ++i) {
        const GsplatProjection<float> p = gsplat_project(&sc.means[i * 3], &covs[i * 9], cam);
        const Exact e =
            exact_projection(&sc.means[i * 3], &sc.quats[i * 4], &sc.scales[i * 3], 410, 256, 256, lim);
        ASSERT_TRUE(p.visible()) << i; // PKB's scene: every pair visible
        for (int a = 0; a < 2; ++a) {
            EXPECT_NEAR(p.mean2d[a], e.mean2d[a], 4.0) << i; // two bf16 steps in [256, 512)
            const double radius = std::ceil(3.33 * std::sqrt(e.cov2d[a * 3]));
            EXPECT_LE(std::abs(p.radius[a] - radius), 1.0) << i;
        }
        // The inverse amplifies bf16's errors where det cancels (elongated, correlated gaussians).
        const double det = e.cov2d[0] * e.cov2d[3] - e.cov2d[1] * e.cov2d[2];
        EXPECT_NEAR(p.conic[0], e.cov2d[3] / det, 0.1 * std::abs(e.cov2d[3] / det) + 1e-2) << i;
        EXPECT_NEAR(p.conic[2], e.cov2d[0] / det, 0.1 * std::abs(e.cov2d[0] / det) + 1e-2) << i;
    }
}

TEST(ToolkitGsplat, Float64TwinAgreesButForDoubleRoundings) {
    const long long n = 20000;
    const Scene sc = make_scene(n, 11, false);
    const std::vector<double> quats(sc.quats.begin(), sc.quats.end()),
        scales(sc.scales.begin(), sc.scales.end());
    const std::vector<float> cov32 = gsplat_covariances(sc.quats, sc.scales, n);
    const std::vector<double> cov64 = gsplat_covariances(quats, scales, n);
    const GsplatCamera<float> cam32 = pkb_camera<float>(512, 512);
    const GsplatCamera<double> cam64 = pkb_camera<double>(512, 512);
    long long radius_moves = 0, value_moves = 0;
    for (long long i = 0; i < n; ++i) {
        const double mean64[3] = {sc.means[i * 3], sc.means[i * 3 + 1], sc.means[i * 3 + 2]};
        const GsplatProjection<float> a = gsplat_project(&sc.means[i * 3], &cov32[i * 9], cam32);
        const GsplatProjection<double> b = gsplat_project(mean64, &cov64[i * 9], cam64);
        for (int k = 0; k < 2; ++k) {
            ASSERT_LE(std::abs(a.radius[k] - b.radius[k]), 1) << i;
            radius_moves += a.radius[k] != b.radius[k];
        }
        const float av[6] = {a.mean2d[0], a.mean2d[1], a.depth, a.conic[0], a.conic[1], a.conic[2]};
        const double bv[6] = {b.mean2d[0], b.mean2d[1], b.depth, b.conic[0], b.conic[1], b.conic[2]};
        for (int k = 0; k < 6; ++k) {
            ASSERT_LE(std::abs(av[k] - bv[k]), 0.05 * std::abs(bv[k]) + 1e-3) << i << " " << k;
            value_moves += av[k] != bv[k];
        }
    }
    // Double roundings are rare and move a few bf16 values, hardly ever an integer radius.
    EXPECT_LE(radius_moves, n * 2 / 1000);
    EXPECT_LE(value_moves, n * 6 / 100);
    RecordProperty("radius_moves", static_cast<int>(radius_moves));
    RecordProperty("value_moves", static_cast<int>(value_moves));
}

TEST(ToolkitGsplat, PacksCameraMajorWithPkbsIdRewrites) {
    // Three simulated ranks of different sizes, one camera each (different image sizes), a culling scene.
    const std::vector<long long> n_world = {300, 200, 250};
    std::vector<GsplatCamera<float>> cameras = {pkb_camera<float>(128, 64), pkb_camera<float>(256, 256),
                                                pkb_camera<float>(64, 96)};
    long long total_visible = 0, total_dropped = 0;
    for (int src = 0; src < 3; ++src) {
        const long long n = n_world[src];
        const Scene sc = make_scene(n, 100 + src, true);
        const std::vector<float> covs = gsplat_covariances(sc.quats, sc.scales, n);
        const GsplatPacked packed =
            gsplat_pack_host(cameras, 1, sc.means, covs, sc.opacities, sc.colors, n_world);
        ASSERT_EQ(packed.counts.size(), 3u);
        ASSERT_EQ(static_cast<long long>(packed.records.size()),
                  packed.counts[0] + packed.counts[1] + packed.counts[2]);
        std::size_t at = 0;
        for (int dest = 0; dest < 3; ++dest) {
            const long long offset = dest == 0 ? 0 : dest == 1 ? 300 : 500; // the DESTINATION's prefix
            long long expected = 0, previous = -1;
            for (long long i = 0; i < n; ++i) {
                const GsplatProjection<float> p =
                    gsplat_project(&sc.means[i * 3], &covs[i * 9], cameras[dest]);
                if (!p.visible())
                    continue;
                ++expected;
                const GsplatRecord& rec = packed.records[at++];
                EXPECT_EQ(rec.camera, 0);
                EXPECT_EQ(rec.gaussian, i + offset);
                EXPECT_GT(rec.gaussian, previous); // ascending within a camera
                previous = rec.gaussian;
                EXPECT_EQ(rec.radius[0], p.radius[0]);
                EXPECT_EQ(rec.values[3], p.conic[0]);
                EXPECT_EQ(rec.values[6], sc.opacities[i]);
                EXPECT_EQ(rec.values[9], sc.colors[i * 3 + 2]);
            }
            EXPECT_EQ(packed.counts[dest], expected);
            total_visible += expected;
            total_dropped += n - expected;
        }
    }
    EXPECT_GT(total_visible, 100); // the culling scene keeps some pairs and drops others
    EXPECT_GT(total_dropped, 100);
}

TEST(ToolkitGsplat, SeveralCamerasPerRankAreLocalToTheirOwner) {
    std::vector<GsplatCamera<float>> cameras;
    for (int c = 0; c < 4; ++c)
        cameras.push_back(pkb_camera<float>(128 + 64 * c, 128));
    const Scene sc = make_scene(50, 5, false);
    const std::vector<float> covs = gsplat_covariances(sc.quats, sc.scales, 50);
    const GsplatPacked packed =
        gsplat_pack_host(cameras, 2, sc.means, covs, sc.opacities, sc.colors, {50, 70});
    ASSERT_EQ(packed.counts, (std::vector<long long>{100, 100})); // PKB's scene: all visible
    EXPECT_EQ(packed.records[0].camera, 0);
    EXPECT_EQ(packed.records[50].camera, 1);
    EXPECT_EQ(packed.records[100].camera, 0);
    EXPECT_EQ(packed.records[100].gaussian, 50); // owner 1's prefix: 50
    EXPECT_EQ(packed.records[199].gaussian, 99);
}
