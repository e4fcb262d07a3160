// PKB problem 71: Hyena's short depthwise causal conv1d over zigzag sequence chunks, each chunk's
// 6-sample left context exchanged with a neighbour rank.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kTaps = 7;

// PKB's sizes are fixed (1 x 1024 channels x 2 chunks of 1024); pkbw takes channels = M and the chunk
// length = N, so the defaults (M = N = 1024) are PKB's shape and --m/--n give a second one.
std::int64_t channels(const ProblemConfig& c) {
    return c.m;
}
std::int64_t chunk(const ProblemConfig& c) {
    return c.n;
}

class HyenaConvBoundary final : public BasicProblem {
public:
    HyenaConvBoundary()
        : BasicProblem({.id = 71,
                        .stem = "71_hyena_conv1d_boundary_exchange",
                        .category = "SCP",
                        .title = "Depthwise causal conv1d over zigzag chunks with halo exchange",
                        .description =
                            "Every rank holds x [1, C, 2L] (two zigzag chunks a, b of L samples) and its own "
                            "weight [C, 1, 7] (standard normal); C = M, L = N (PKB: 1024 and 1024, the "
                            "defaults). Chunk a is convolved (F.conv1d, groups = C, no padding) after the "
                            "last 6 samples of chunk a of rank r-1 (zeros on rank 0), chunk b after the last "
                            "6 samples of chunk b of rank r+1 (on the last rank: its own chunk a's). Output "
                            "[1, C, 2L] in D. N must be at least 6."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        if (chunk(c) < kTaps - 1) {
            return info().stem + ": N = " + std::to_string(c.n) + " (the chunk length) must be at least 6";
        }
        return std::nullopt;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"x", c.dtype, {1, channels(c), 2 * chunk(c)}}, {"weight", c.dtype, {channels(c), 1, kTaps}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {1, channels(c), 2 * chunk(c)}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs, exact_amplitude(c.dtype, kTaps));
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double n = static_cast<double>(channels(c) * 2 * chunk(c)), e = elem_bytes(c);
        return {.collective = CollectiveKind::None,
                .collective_bytes = 2.0 * static_cast<double>(channels(c)) * (kTaps - 1) * e,
                .flops = 2 * kTaps * n,
                .memory_bytes = 2 * n * e};
    }
};

} // namespace

const Problem& problem_71() {
    static const HyenaConvBoundary problem;
    return problem;
}

} // namespace pkbw::problems
