// Problem 62 (torch-harmonics' DISCO spherical convolution): PKB's polar x azimuth grid and sizes at
// M = N = 1024, the reduced sizes below, and psi as PKB's coalesced COO tensor (sorted, in range, four
// distinct entries a row at PKB's columns).
#include "test_util.h"

#include <cmath>
#include <set>
#include <tuple>

namespace pkbw::test {
namespace {

const Problem& disco() {
    return problem("62");
}

struct Psi {
    std::vector<std::int64_t> k, lat, col;
    std::vector<double> values;
};

Psi psi_of(const std::vector<Tensor>& inputs) {
    const std::int64_t nnz = inputs[2].numel();
    Psi psi;
    for (std::int64_t e = 0; e < nnz; ++e) {
        psi.k.push_back(static_cast<std::int64_t>(inputs[1].get_f64(e)));
        psi.lat.push_back(static_cast<std::int64_t>(inputs[1].get_f64(nnz + e)));
        psi.col.push_back(static_cast<std::int64_t>(inputs[1].get_f64(2 * nnz + e)));
        psi.values.push_back(inputs[2].get_f64(e));
    }
    return psi;
}

TEST(SphericalConvolution62, PkbGridAndShapesAtDefaults) {
    const Problem& p = disco();
    // W -> (azimuth, polar, nlat, nlon): azimuth 2 for even W, nlat 128 rounded up to polar.
    const std::tuple<int, int, int, std::int64_t, std::int64_t> grids[] = {
        {1, 1, 1, 128, 256}, {2, 2, 1, 128, 256}, {3, 1, 3, 129, 258},
        {4, 2, 2, 128, 256}, {6, 2, 3, 129, 258}, {8, 2, 4, 128, 256}};
    for (const auto& [world, azimuth, polar, nlat, nlon] : grids) {
        const ProblemConfig c = config(world, 1024, 1024, DType::BF16);
        const auto params = p.params(c);
        EXPECT_EQ(params.at("azimuth_size"), azimuth) << "W=" << world;
        EXPECT_EQ(params.at("polar_size"), polar) << "W=" << world;
        EXPECT_EQ(params.at("nlon_in"), nlon) << "W=" << world;
        EXPECT_EQ(params.at("nlon_out"), nlon) << "W=" << world;
        EXPECT_EQ(params.at("groups"), 1.0);
        EXPECT_EQ(*find_list_param(params, "psi_shape"),
                  (std::vector<double>{3, double(nlat), double(nlat / polar * nlon)}));
        const auto in = p.input_specs(c, world - 1);
        ASSERT_EQ(in.size(), 5u);
        EXPECT_EQ(in[0].name, "x");
        EXPECT_EQ(in[0].dtype, DType::F32); // fp32 whatever --dtype says, as PKB's
        EXPECT_EQ(in[0].shape, (Shape{32, 8, nlat / polar, nlon / azimuth})) << "W=" << world;
        EXPECT_EQ(in[1].dtype, DType::I64);
        EXPECT_EQ(in[1].shape, (Shape{3, 12 * nlat}));
        EXPECT_EQ(in[2].shape, (Shape{12 * nlat}));
        EXPECT_EQ(in[3].shape, (Shape{8, 8, 3}));
        EXPECT_EQ(in[4].shape, (Shape{8}));
        const auto out = p.output_specs(c, 0);
        EXPECT_EQ(out.at(0).dtype, DType::F32);
        EXPECT_EQ(out.at(0).shape, (Shape{32, 8, nlat / polar, nlon / azimuth}));
    }
    // PKB's 1536 non-zeros at W = 2 and 4.
    EXPECT_EQ(p.input_specs(config(4, 1024, 1024), 0)[1].shape, (Shape{3, 1536}));
}

TEST(SphericalConvolution62, ReducedShapesFollowMAndN) {
    const Problem& p = disco();
    // Test shape 64 x 128 at W = 8: B = 2, nlat = 16 over polar 4, nlon = 32 over azimuth 2.
    EXPECT_EQ(p.input_specs(config(8, 64, 128), 0)[0].shape, (Shape{2, 8, 4, 16}));
    // Second shape 96 x 200: nlat = 25, rounded up to 26 (W = 4) and 28 (W = 8).
    EXPECT_EQ(p.input_specs(config(2, 96, 200), 0)[0].shape, (Shape{3, 8, 25, 25}));
    EXPECT_EQ(p.input_specs(config(4, 96, 200), 0)[0].shape, (Shape{3, 8, 13, 26}));
    EXPECT_EQ(p.input_specs(config(8, 96, 200), 0)[0].shape, (Shape{3, 8, 7, 28}));
    // The smallest: at least one batch element and 8 latitudes.
    EXPECT_EQ(p.input_specs(config(2, 1, 1), 0)[0].shape, (Shape{1, 8, 8, 8}));
    EXPECT_TRUE(p.check_config(config(64, 8, 8)) == std::nullopt);
    EXPECT_TRUE(p.check_config(config(65, 1024, 1024)).has_value());
}

TEST(SphericalConvolution62, PsiIsPkbsCoalescedPattern) {
    const Problem& p = disco();
    for (const int world : {2, 4, 8}) {
        const ProblemConfig c = config(world, 64, 128, DType::F32);
        const auto params = p.params(c);
        const std::int64_t nlat = static_cast<std::int64_t>(find_list_param(params, "psi_shape")->at(1));
        const std::int64_t nlon = static_cast<std::int64_t>(params.at("nlon_in"));
        const std::int64_t local = nlat / static_cast<std::int64_t>(params.at("polar_size"));
        const Psi first = psi_of(p.build_inputs(c, 0));
        const Psi last = psi_of(p.build_inputs(c, world - 1));
        // Every rank has the same indices ((t - offset) mod local = t mod local) and its own values.
        EXPECT_EQ(first.col, last.col);
        EXPECT_NE(first.values, last.values);
        std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> expected, seen;
        for (std::int64_t k = 0; k < 3; ++k)
            for (std::int64_t t = 0; t < nlat; ++t)
                for (std::int64_t e = 0; e < 4; ++e)
                    expected.insert({k, t, (t % local) * nlon + (t + e * (k + 1)) % nlon});
        for (std::size_t e = 0; e < first.k.size(); ++e) {
            const auto key = std::make_tuple(first.k[e], first.lat[e], first.col[e]);
            if (e > 0) {
                ASSERT_LT(std::make_tuple(first.k[e - 1], first.lat[e - 1], first.col[e - 1]), key)
                    << "psi must be coalesced (sorted, no duplicates), W=" << world << " entry " << e;
            }
            seen.insert(key);
            // randn * 0.05 in f32: small, non-zero.
            EXPECT_LT(std::abs(first.values[e]), 0.5);
        }
        EXPECT_EQ(seen, expected) << "W=" << world;
    }
}

TEST(SphericalConvolution62, ExactModeDrawsQuarters) {
    const Problem& p = disco();
    const auto in = p.build_inputs(config(4, 64, 128, DType::F32, InputMode::Exact), 1);
    for (const int index : {0, 2, 3, 4})
        for (std::int64_t i = 0; i < in[index].numel(); ++i) {
            const double v = in[index].get_f64(i);
            ASSERT_EQ(v * 4, std::round(v * 4)) << "input " << index << " element " << i;
            ASSERT_LE(std::abs(v), 2.0);
        }
}

} // namespace
} // namespace pkbw::test
