// PKB problem 61: distributed 3-D Gaussian splatting projection (gsplat). Every rank holds a scene shard
// and one camera; the cameras are gathered, every local gaussian is projected to every camera in bf16
// (gsplat's torch implementation op by op), the visible (camera, gaussian) pairs are packed and sent to
// the camera's owner. The number of pairs a rank receives is data-dependent: eight variable-length
// outputs (docs/solution-abi.md "Variable-length outputs").
#include "pkbw/toolkit/trilinear.h" // round_to_bf16
#include "problem_util.h"

#include <algorithm>
#include <string>

namespace pkbw::problems {
namespace {

// PKB's sizes: n_local = max(1000, min(M, 10000)) gaussians a rank, image width max(64, min(N, 512)),
// height max(64, min(M, 512)), one camera a rank, 3 colour channels. The oracle projects W·n pairs a
// rank, so PKB's sizes need no reduction.
struct Sizes {
    std::int64_t n, width, height;
};
Sizes sizes_of(const ProblemConfig& c) {
    return {std::max<std::int64_t>(1000, std::min<std::int64_t>(c.m, 10000)),
            std::max<std::int64_t>(64, std::min<std::int64_t>(c.n, 512)),
            std::max<std::int64_t>(64, std::min<std::int64_t>(c.m, 512))};
}
constexpr std::int64_t kChannels = 3;
constexpr double kEps2d = 0.3, kNearPlane = 0.01, kFarPlane = 1e10;

// torch.rand in bf16, then op-by-op bf16 arithmetic with the Python scalars in fp32 (PKB draws on the GPU).
float rand_bf16(const CounterRng& rng, std::uint64_t i) {
    const float u = tk::round_to_bf16(static_cast<float>(rng.uniform(i)));
    return u < 1.0f ? u : 0.0f; // torch keeps rand in [0, 1)
}
float bf(float v) {
    return tk::round_to_bf16(v);
}

// PKB's scene (exact == false): x, y = (rand - 0.5) * 1.5, z = rand * 2 + 2, every pair visible. The
// culling scene (exact mode): x, y = (rand - 0.5) * 6, z = rand * 5 - 1, so that gaussians fall behind
// the near plane and outside the image and the packing drops pairs.
std::vector<double> scene_means(const CounterRng& rng, std::int64_t n, bool culling) {
    std::vector<double> v(static_cast<std::size_t>(n * 3));
    const float spread = culling ? 6.0f : 1.5f, depth_scale = culling ? 5.0f : 2.0f;
    const float depth_shift = culling ? -1.0f : 2.0f;
    for (std::int64_t i = 0; i < n; ++i) {
        for (int axis = 0; axis < 2; ++axis)
            v[i * 3 + axis] = bf(bf(rand_bf16(rng, axis * n + i) - 0.5f) * spread);
        v[i * 3 + 2] = bf(bf(rand_bf16(rng, 2 * n + i) * depth_scale) + depth_shift);
    }
    return v;
}

template <class F>
std::vector<double> drawn(std::int64_t count, F&& value_at) {
    std::vector<double> v(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i)
        v[static_cast<std::size_t>(i)] = value_at(static_cast<std::uint64_t>(i));
    return v;
}

constexpr const char* kDescription =
    "Every rank holds n = max(1000, min(M, 10000)) gaussians (bf16 whatever the dtype): means [n, 3] (x, y "
    "= (rand - 0.5) * 1.5, z = rand * 2 + 2), quats [n, 4] (randn), scales [n, 3] (rand * 0.02), opacities "
    "[n] (rand * 0.8 + 0.1), colors [n, 3] (rand), and one camera: viewmats [1, 4, 4] = I, Ks [1, 3, 3] with "
    "fx = fy = 0.8 min(w, h), cx = w/2, cy = h/2; image w = max(64, min(N, 512)), h = max(64, min(M, 512)). "
    "The cameras are gathered; each local gaussian is projected to each camera in bf16 op by op (gsplat's "
    "torch implementation: covariance from quaternion and scale, world to camera, clamped perspective "
    "Jacobian, cov2d + eps2d, conics, radii ceil(3.33 sqrt(cov2d diagonal)) zeroed outside (near, far) and "
    "outside the image); pairs with both radii > 0 go to the camera's owner. Rank p returns the pairs for "
    "its camera in source-rank order, each source's gaussians ascending: camera ids (int64, local: 0), "
    "gaussian ids (int64: local id + the sum of n over ranks before p, PKB's destination offset), radii "
    "[K, 2] int32, means2d [K, 2], depths [K], conics [K, 3], opacities [K], colors [K, 3] (bf16). All "
    "eight are variable-length with bound W*n: the solution reports K (ctx.set_output_length). Params "
    "image_width, image_height, eps2d, near_plane, far_plane. Exact mode draws a wider, deeper scene "
    "whose packing drops pairs.";

class GsplatProjection final : public BasicProblem {
public:
    GsplatProjection()
        : BasicProblem({.id = 61,
                        .stem = "61_gsplat_3d_gaussian_splatting",
                        .category = "DOM",
                        .title = "gsplat: project gaussians to every rank's camera in bf16, pack, all-to-all",
                        .description = kDescription}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const std::int64_t n = sizes_of(c).n;
        return {{"means", DType::BF16, {n, 3}},          {"quats", DType::BF16, {n, 4}},
                {"scales", DType::BF16, {n, 3}},         {"opacities", DType::BF16, {n}},
                {"colors", DType::BF16, {n, kChannels}}, {"viewmats", DType::BF16, {1, 4, 4}},
                {"Ks", DType::BF16, {1, 3, 3}}};
    }
    // All variable-length: at most every rank's n gaussians are visible in one camera.
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const std::int64_t bound = sizes_of(c).n * c.world_size;
        return {
            {"output_0", DType::I64, {bound}, true},    {"output_1", DType::I64, {bound}, true},
            {"output_2", DType::I32, {bound, 2}, true}, {"output_3", DType::BF16, {bound, 2}, true},
            {"output_4", DType::BF16, {bound}, true},   {"output_5", DType::BF16, {bound, 3}, true},
            {"output_6", DType::BF16, {bound}, true},   {"output_7", DType::BF16, {bound, kChannels}, true}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const Sizes s = sizes_of(c);
        const bool culling = c.input_mode == InputMode::Exact;
        auto rng = [&](int stream) { return input_rng(c, info().id, rank, stream); };
        fill_values(inputs[0], scene_means(rng(0), s.n, culling));
        const CounterRng quats = rng(1), scales = rng(2), opacities = rng(3), colors = rng(4);
        fill_values(inputs[1], drawn(s.n * 4, [&](std::uint64_t i) { return bf(float(quats.normal(i))); }));
        fill_values(inputs[2],
                    drawn(s.n * 3, [&](std::uint64_t i) { return bf(rand_bf16(scales, i) * 0.02f); }));
        fill_values(inputs[3], drawn(s.n, [&](std::uint64_t i) {
                        return bf(bf(rand_bf16(opacities, i) * 0.8f) + 0.1f);
                    }));
        fill_values(inputs[4], drawn(s.n * kChannels, [&](std::uint64_t i) { return rand_bf16(colors, i); }));
        std::vector<double> view(16, 0.0), k(9, 0.0);
        for (int i = 0; i < 4; ++i)
            view[i * 5] = 1.0;
        const double focal = 0.8 * static_cast<double>(std::min(s.width, s.height));
        k[0] = k[4] = focal; // fill_values rounds to bf16 as PKB's assignment does
        k[2] = static_cast<double>(s.width) * 0.5;
        k[5] = static_cast<double>(s.height) * 0.5;
        k[8] = 1.0;
        fill_values(inputs[5], view);
        fill_values(inputs[6], k);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const Sizes s = sizes_of(c);
        return {{"image_width", double(s.width)},
                {"image_height", double(s.height)},
                {"eps2d", kEps2d},
                {"near_plane", kNearPlane},
                {"far_plane", kFarPlane}};
    }
    // nccl-tests' alltoall over this rank's pairs when all are visible (PKB's scene): per pair two int64
    // ids, two int32 radii and ten bf16 values; about 150 FLOPs a pair and 60 a covariance.
    WorkModel work(const ProblemConfig& c) const override {
        const Sizes s = sizes_of(c);
        const double pairs = double(s.n) * c.world_size;
        WorkModel model;
        model.collective = CollectiveKind::AllToAll;
        model.collective_bytes = pairs * 44;
        model.flops = 150 * pairs + 60 * double(s.n);
        model.memory_bytes = double(s.n) * 14 * 2 + 2 * pairs * 44;
        return model;
    }
};

} // namespace

const Problem& problem_61() {
    static const GsplatProjection problem;
    return problem;
}

} // namespace pkbw::problems
