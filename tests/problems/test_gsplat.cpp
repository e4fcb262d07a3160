// Problem 61 (gsplat projection): PKB's sizes by M and N, bf16 inputs whatever the dtype, the camera,
// eight variable-length outputs with bound W·n, the params, and the scenes: PKB's (every pair visible,
// so K = W·n) and exact mode's culling scene (pairs dropped), projected with the toolkit's geometry.
#include "pkbw/toolkit/gsplat_geometry_host.h"
#include "test_util.h"

#include <string>

namespace pkbw::test {
namespace {

const char* const kStem = "61_gsplat_3d_gaussian_splatting";

std::vector<float> values(const Tensor& t) {
    std::vector<float> v(static_cast<std::size_t>(t.numel()));
    for (std::int64_t i = 0; i < t.numel(); ++i)
        v[static_cast<std::size_t>(i)] = static_cast<float>(t.get_f64(i));
    return v;
}

// How many of a rank's gaussians are visible in its own camera.
long long visible_pairs(const std::vector<Tensor>& in, long long width, long long height) {
    const std::vector<float> view = values(in[5]), k = values(in[6]);
    const tk::GsplatCamera<float> cam =
        tk::gsplat_camera(tk::GsplatView{width, height}, view.data(), k.data());
    const long long n = in[0].shape()[0];
    const std::vector<float> means = values(in[0]);
    const std::vector<float> covs = tk::gsplat_covariances(values(in[1]), values(in[2]), n);
    long long visible = 0;
    for (long long i = 0; i < n; ++i)
        visible += tk::gsplat_project(&means[i * 3], &covs[i * 9], cam).visible();
    return visible;
}

TEST(Gsplat, PkbSizesFollowMAndN) {
    const Problem& p = problem(kStem);
    struct Case {
        std::int64_t m, n, gaussians, width, height;
    };
    for (const Case& c :
         {Case{1024, 1024, 1024, 512, 512}, Case{64, 128, 1000, 128, 64}, Case{20000, 40, 10000, 64, 512}}) {
        const auto cfg = config(4, c.m, c.n, DType::F32);
        ASSERT_FALSE(p.check_config(cfg).has_value());
        const auto in = p.input_specs(cfg, 3);
        ASSERT_EQ(in.size(), 7u);
        EXPECT_EQ(in[0].name, "means");
        EXPECT_EQ(in[6].name, "Ks");
        EXPECT_EQ(in[0].shape, (Shape{c.gaussians, 3}));
        EXPECT_EQ(in[1].shape, (Shape{c.gaussians, 4}));
        EXPECT_EQ(in[4].shape, (Shape{c.gaussians, 3}));
        EXPECT_EQ(in[5].shape, (Shape{1, 4, 4}));
        for (const auto& spec : in)
            EXPECT_EQ(spec.dtype, DType::BF16) << spec.name; // PKB's bf16 whatever the dtype
        const auto out = p.output_specs(cfg, 3);
        ASSERT_EQ(out.size(), 8u);
        for (const auto& spec : out) {
            EXPECT_TRUE(spec.variable_length) << spec.name;
            EXPECT_EQ(spec.shape[0], 4 * c.gaussians) << spec.name;
        }
        EXPECT_EQ(out[0].dtype, DType::I64);
        EXPECT_EQ(out[1].dtype, DType::I64);
        EXPECT_EQ(out[2].dtype, DType::I32);
        EXPECT_EQ(out[2].shape, (Shape{4 * c.gaussians, 2}));
        EXPECT_EQ(out[5].shape, (Shape{4 * c.gaussians, 3}));
        const auto params = p.params(cfg);
        EXPECT_EQ(params.at("image_width"), double(c.width));
        EXPECT_EQ(params.at("image_height"), double(c.height));
        EXPECT_EQ(params.at("eps2d"), 0.3);
        EXPECT_EQ(params.at("near_plane"), 0.01);
        EXPECT_EQ(params.at("far_plane"), 1e10);
    }
    const auto refused = p.check_config(config(2, 64, 128, DType::I32));
    ASSERT_TRUE(refused.has_value());
    EXPECT_NE(refused->find(kStem), std::string::npos);
}

TEST(Gsplat, PkbSceneAndCameraEveryPairVisible) {
    const Problem& p = problem(kStem);
    for (int world : {2, 4}) {
        const auto cfg = config(world, 64, 128, DType::F32);
        const auto in0 = p.build_inputs(cfg, 0), in1 = p.build_inputs(cfg, 1);
        EXPECT_NE(values(in0[0]), values(in1[0])); // per-rank draws
        EXPECT_EQ(values(in0[0]), values(p.build_inputs(cfg, 0)[0]));
        EXPECT_EQ(values(in0[5]), (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
        // fx = fy = bf16(0.8 · 64) = 51.25, cx = 64, cy = 32.
        EXPECT_EQ(values(in0[6]), (std::vector<float>{51.25f, 0, 64, 0, 51.25f, 32, 0, 0, 1}));
        const std::vector<float> means = values(in0[0]), scales = values(in0[2]), opac = values(in0[3]);
        for (std::size_t i = 0; i < means.size(); i += 3) {
            ASSERT_GE(means[i], -0.75f);
            ASSERT_LE(means[i], 0.75f);
            ASSERT_GE(means[i + 2], 2.0f);
            ASSERT_LE(means[i + 2], 4.0f);
        }
        for (float s : scales)
            ASSERT_TRUE(s >= 0 && s <= 0.02f);
        for (float o : opac)
            ASSERT_TRUE(o >= 0.1f && o <= 0.9f);
        EXPECT_EQ(visible_pairs(in0, 128, 64), 1000);
    }
}

TEST(Gsplat, ExactModeCullsPairs) {
    const Problem& p = problem(kStem);
    const auto cfg = config(2, 1024, 1024, DType::BF16, InputMode::Exact);
    const auto in = p.build_inputs(cfg, 1);
    const long long visible = visible_pairs(in, 512, 512);
    EXPECT_GT(visible, 100);
    EXPECT_LT(visible, 900); // of 1024: behind the near plane or outside the image
}

} // namespace
} // namespace pkbw::test
