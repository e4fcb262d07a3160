// PKB problem 87: a 3x3 conv2d on a latent sharded by height, each rank's missing rows (one-row halos)
// taken from an all-gather of every rank's top and bottom rows, zeros beyond the first and last rank.
#include "problem_util.h"

#include <algorithm>
#include <string>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kPadding = 1, kKernel = 2 * kPadding + 1;

// PKB: channels 320, 640 or 1280 by N (N/512 = 0, 1, >= 2); a 128 x 128 latent whose height is split
// over max(1, W/2) ranks (at least 3 rows each). pkbw's latent is M/8 square, so the default M = 1024
// is PKB's 128 and a small M keeps the float64 oracle (about 2·C²·9·h·w FLOPs a rank) on a CPU's reach.
struct Shape87 {
    std::int64_t channels = 0, latent = 0, local_h = 0;
};
Shape87 shape_of(const ProblemConfig& c) {
    static constexpr std::int64_t kChannels[] = {320, 640, 1280};
    Shape87 s;
    s.channels = kChannels[std::min<std::int64_t>(c.n / 512, 2)];
    s.latent = c.m / 8;
    const std::int64_t ranks_per_image = std::max(1, c.world_size / 2);
    s.local_h = std::max(kKernel, s.latent / ranks_per_image);
    return s;
}

class Conv2dBoundaryExchange final : public BasicProblem {
public:
    Conv2dBoundaryExchange()
        : BasicProblem({.id = 87,
                        .stem = "87_conv2d_boundary_exchange",
                        .category = "DOM",
                        .title = "3x3 conv2d on a height-sharded latent with one-row halo all-gather",
                        .description =
                            "x [1, C, h, L] per rank, weight [C, C, 3, 3] and bias [C] per rank (standard "
                            "normal); C = 320, 640 or 1280 for N/512 = 0, 1, >= 2; L = M/8 (PKB: 128 at "
                            "M = 1024), h = max(3, L / max(1, W/2)). Every rank's first and last row are "
                            "all-gathered; rank r convolves [rank r-1's last row (zeros on rank 0); x; rank "
                            "r+1's first row (zeros on the last rank)] with padding (0, 1), stride 1 "
                            "(params stride, padding); W = 1 is a plain conv2d with padding 1. Output [1, C, "
                            "h, L] in D: the conv rounded to D, then + bias rounded to D."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info()))
            return why;
        if (c.m < 8)
            return info().stem + ": M = " + std::to_string(c.m) +
                   " must be at least 8 (the latent is M/8 square)";
        return std::nullopt;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Shape87 s = shape_of(c);
        return {{"x", c.dtype, {1, s.channels, s.local_h, s.latent}},
                {"weight", c.dtype, {s.channels, s.channels, kKernel, kKernel}},
                {"bias", c.dtype, {s.channels}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Shape87 s = shape_of(c);
        return {{"output", c.dtype, {1, s.channels, s.local_h, s.latent}}};
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"stride", 1.0}, {"padding", static_cast<double>(kPadding)}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const Shape87 s = shape_of(c);
        fill_random_inputs(c, info().id, rank, inputs,
                           exact_amplitude(c.dtype, static_cast<int>(s.channels * kKernel * kKernel)));
    }
    WorkModel work(const ProblemConfig& c) const override {
        const Shape87 s = shape_of(c);
        const double e = elem_bytes(c), cs = static_cast<double>(s.channels);
        const double pixels = static_cast<double>(s.local_h * s.latent);
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = c.world_size * 2.0 * kPadding * cs * static_cast<double>(s.latent) * e,
                .flops = 2 * cs * cs * kKernel * kKernel * pixels,
                .memory_bytes = (2 * cs * pixels + cs * cs * kKernel * kKernel + cs) * e};
    }
};

} // namespace

const Problem& problem_87() {
    static const Conv2dBoundaryExchange problem;
    return problem;
}

} // namespace pkbw::problems
