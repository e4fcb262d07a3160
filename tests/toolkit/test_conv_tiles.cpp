// Host side of the convolution and tiled-decode toolkit pieces (87, 78): conv_host.h's direct sum
// against hand-computed and naively computed values, tiled_decode.h's plan and dealing at PKB's
// shape, trilinear.h's source coordinates, bf16 rounding and blend.
#include "pkbw/toolkit/conv_host.h"
#include "pkbw/toolkit/tiled_decode.h"
#include "pkbw/toolkit/trilinear.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace pkbw::tk;

TEST(ToolkitConv, TwoDimensionalByHand) {
    // x = 1..9 as [1, 1, 3, 3], a 3x3 kernel of ones: sums of the in-range neighbourhoods.
    std::vector<double> x(9);
    for (int i = 0; i < 9; ++i)
        x[i] = i + 1;
    const std::vector<double> ones(9, 1.0);
    const ConvGeometry same = conv2d_geometry(1, 1, 3, 3, 3, 3, 1, 1, 1, 1);
    EXPECT_EQ(same.out_positions(), 9);
    EXPECT_EQ(conv_f64(same, 1, x, ones), (std::vector<double>{12, 21, 16, 27, 45, 33, 24, 39, 28}));
    const ConvGeometry strided = conv2d_geometry(1, 1, 3, 3, 3, 3, 2, 2, 1, 1);
    EXPECT_EQ(conv_f64(strided, 1, x, ones), (std::vector<double>{12, 16, 24, 28}));
    // 87's framing: padding (0, 1) on 3 rows gives one output row.
    const ConvGeometry framed = conv2d_geometry(1, 1, 3, 3, 3, 3, 1, 1, 0, 1);
    EXPECT_EQ(conv_f64(framed, 1, x, ones), (std::vector<double>{27, 45, 33}));
}

TEST(ToolkitConv, ThreeDimensionalMatchesANaiveSum) {
    // 2 images, 2 -> 3 channels, 4 x 5 x 6 input, kernel 2 x 3 x 2, stride (1, 2, 1), padding (1, 0, 2),
    // dilation (2, 1, 1): every index rule at once.
    ConvGeometry g;
    g.channels = 2;
    g.out_channels = 3;
    const long long in[3] = {4, 5, 6}, k[3] = {2, 3, 2}, s[3] = {1, 2, 1}, p[3] = {1, 0, 2}, d[3] = {2, 1, 1};
    for (int a = 0; a < 3; ++a) {
        g.in[a] = in[a];
        g.kernel[a] = k[a];
        g.stride[a] = s[a];
        g.pad[a] = p[a];
        g.dilation[a] = d[a];
    }
    const long long batch = 2;
    std::vector<double> x(static_cast<std::size_t>(batch * 2 * 4 * 5 * 6)), w(3 * 2 * 2 * 3 * 2);
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = static_cast<double>((i * 7) % 11) - 5;
    for (std::size_t i = 0; i < w.size(); ++i)
        w[i] = static_cast<double>((i * 5) % 7) - 3;
    const std::vector<double> y = conv_f64(g, batch, x, w);
    const long long o0 = g.out(0), o1 = g.out(1), o2 = g.out(2);
    EXPECT_EQ(o0, 4); // (4 + 2 - 2 - 1) / 1 + 1
    EXPECT_EQ(o1, 2); // (5 - 2 - 1) / 2 + 1
    EXPECT_EQ(o2, 9); // (6 + 4 - 1 - 1) / 1 + 1
    ASSERT_EQ(y.size(), static_cast<std::size_t>(batch * 3 * o0 * o1 * o2));
    std::size_t checked = 0;
    for (long long b = 0; b < batch; ++b)
        for (long long oc = 0; oc < 3; ++oc)
            for (long long a = 0; a < o0; ++a)
                for (long long e = 0; e < o1; ++e)
                    for (long long f = 0; f < o2; ++f) {
                        double sum = 0;
                        for (long long c = 0; c < 2; ++c)
                            for (long long ka = 0; ka < 2; ++ka)
                                for (long long ke = 0; ke < 3; ++ke)
                                    for (long long kf = 0; kf < 2; ++kf) {
                                        const long long i0 = a - 1 + 2 * ka, i1 = 2 * e + ke, i2 = f - 2 + kf;
                                        if (i0 < 0 || i0 >= 4 || i1 < 0 || i1 >= 5 || i2 < 0 || i2 >= 6)
                                            continue;
                                        sum += w[((oc * 2 + c) * 2 + ka) * 6 + ke * 2 + kf] *
                                               x[(((b * 2 + c) * 4 + i0) * 5 + i1) * 6 + i2];
                                    }
                        EXPECT_EQ(y[(((b * 3 + oc) * o0 + a) * o1 + e) * o2 + f], sum);
                        ++checked;
                    }
    EXPECT_EQ(checked, y.size());
}

TEST(ToolkitTiledDecode, PkbPlanAndDealing) {
    TiledDecodeArgs a;
    a.min_length = 3;
    a.min_height = a.min_width = 32;
    a.spatial_overlap = 0.25;
    a.spatial_upsample = 8;
    a.temporal_upsample = 4;
    std::string error;
    const TilePlan p = make_tile_plan(6, 90, 90, a, error);
    ASSERT_TRUE(error.empty()) << error;
    EXPECT_EQ(p.count(), 32);
    EXPECT_EQ(p.stride[1], 24);
    EXPECT_EQ(p.blend[1], 64);
    EXPECT_EQ(p.keep[1], 192);
    EXPECT_EQ(p.blend[0], 0);
    EXPECT_EQ(p.decoded(1, 3), 144); // the last tile holds 18 latent rows
    EXPECT_EQ(p.overlap(1, 3), 64);
    EXPECT_EQ(p.out_extent(0), 24);
    EXPECT_EQ(p.out_extent(1), 720);
    EXPECT_EQ(p.out_extent(2), 720);
    EXPECT_EQ(p.out_offset(2, 3), 576);
    // Largest first, equal sizes in tile order: 18 full tiles, 12 with one short side, then 15 and 31.
    const std::vector<long long> sorted = {0,  1,  2, 4, 5,  6,  8,  9,  10, 16, 17, 18, 20, 21, 22, 24,
                                           25, 26, 3, 7, 11, 12, 13, 14, 19, 23, 27, 28, 29, 30, 15, 31};
    for (int world : {1, 2, 3, 8}) {
        const std::vector<int> owner = deal_tiles(p, world);
        for (std::size_t k = 0; k < sorted.size(); ++k)
            EXPECT_EQ(owner[sorted[k]], static_cast<int>(k % world))
                << "W = " << world << ", tile " << sorted[k];
    }
    a.spatial_overlap = 1.0;
    make_tile_plan(6, 90, 90, a, error);
    EXPECT_FALSE(error.empty()); // a zero stride, as PKB's ValueError
}

TEST(ToolkitTiledDecode, TrilinearSourceAndBlend) {
    // Upsampling by 8, align_corners = False: src = (dst + 0.5) / 8 - 0.5, clamped at 0; the edge repeats.
    LinearTap t = linear_tap(0, 1.f / 8, 4);
    EXPECT_EQ(t.lower, 0);
    EXPECT_EQ(t.w1, 0.f);
    t = linear_tap(4, 1.f / 8, 4);
    EXPECT_EQ(t.lower, 0);
    EXPECT_EQ(t.step, 1);
    EXPECT_EQ(t.w1, 0.0625f);
    t = linear_tap(31, 1.f / 8, 4);
    EXPECT_EQ(t.lower, 3);
    EXPECT_EQ(t.step, 0);
    // A volume x(t, h, w) = t + 2h + 4w is reproduced exactly inside (trilinear is exact on linear data).
    auto at = [](long long a, long long b, long long c) { return static_cast<float>(a + 2 * b + 4 * c); };
    const float v =
        trilinear(at, linear_tap(5, 0.25f, 3), linear_tap(12, 0.125f, 4), linear_tap(20, 0.125f, 4));
    EXPECT_EQ(v, (5.5f / 4 - 0.5f) + 2 * (12.5f / 8 - 0.5f) + 4 * (20.5f / 8 - 0.5f));
    EXPECT_EQ(round_to_bf16(1.f + 1.f / 256), 1.f); // a tie to even
    EXPECT_EQ(round_to_bf16(1.f + 3.f / 512), 1.f + 1.f / 128);
    // prev * (1 - ratio) and cur * ratio rounded to bf16 each, then their sum.
    EXPECT_EQ(blend_bf16(1.f, 3.f, 1, 4), 1.5f);
    EXPECT_EQ(blend_bf16(1.f, 3.f, 0, 4), 1.f);
    // 1.00390625 * 0.75 = 0.7529296875 rounds to 0.75390625 (bf16 step 2^-8 there); 0 * 0.25 = 0.
    EXPECT_EQ(blend_bf16(1.00390625f, 0.f, 1, 4), 0.75390625f);
}
