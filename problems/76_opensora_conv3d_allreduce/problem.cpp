// PKB problem 76: a 3x3x3 conv3d whose input channels are split over the ranks; every rank convolves its
// channel shard with its own weight slice, the partial outputs are all-reduced (in D) and the bias added.
#include "attention_inputs.h"
#include "problem_util.h"
#include "shared_inputs.h"

#include <string>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kKernel = 3, kTime = 19;
// PKB's _CONV3D_NUMEL_LIMIT: above it PKB convolves channel chunks with a rounding per chunk.
constexpr double kChunkLimit = 2147483648.0;

// PKB: out channels the first of 512, 256, 128 that W divides (512 if none), C/W input channels per
// rank (C // W when W divides none of them), input [1, C/W, 19, 66, 66]. pkbw takes the channel
// choices as N/2, N/4, N/8 and the frame as M/16 + 2 square, so the default M = N = 1024 is PKB's
// shape and a small M, N keeps the float64 oracle (2·C·(C/W)·27·17·(M/16)² FLOPs a rank) on a CPU.
struct Shape76 {
    std::int64_t channels = 0, local_channels = 0, frame = 0;
};
Shape76 shape_of(const ProblemConfig& c) {
    Shape76 s;
    s.channels = c.n / 2;
    for (const std::int64_t candidate : {c.n / 2, c.n / 4, c.n / 8})
        if (candidate > 0 && candidate % c.world_size == 0) {
            s.channels = candidate;
            break;
        }
    s.local_channels = s.channels / c.world_size;
    s.frame = c.m / 16 + 2;
    return s;
}
std::int64_t out_positions(const Shape76& s) {
    const std::int64_t out = s.frame - kKernel + 1;
    return (kTime - kKernel + 1) * out * out;
}

class OpenSoraConv3dAllReduce final : public BasicProblem {
public:
    OpenSoraConv3dAllReduce()
        : BasicProblem(
              {.id = 76,
               .stem = "76_opensora_conv3d_allreduce",
               .category = "DOM",
               .title = "3x3x3 conv3d over input-channel shards, partial outputs all-reduced, then + bias",
               .description =
                   "x [1, C/W, 19, F, F] and weight [C, C/W, 3, 3, 3] per rank (standard normal), bias [C] "
                   "= linspace(-0.1, 0.1, C) in D; C = the first of N/2, N/4, N/8 that W divides (N/2 "
                   "if none, then C // W input channels a rank), F = M/16 + 2 (PKB: C = 512, F = 66 at "
                   "M = N = 1024). Each rank's conv3d (stride 1, padding 0, dilation 1: params stride, "
                   "padding, dilation, groups) is rounded to D, all-reduced (sum in D), then + bias rounded "
                   "to D. Output [1, C, 17, F - 2, F - 2] in D, the same on every rank."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info()))
            return why;
        if (c.m < 16)
            return info().stem + ": M = " + std::to_string(c.m) +
                   " must be at least 16 (the frame is M/16 + 2 square, at least 3)";
        if (c.n / 2 < c.world_size)
            return info().stem + ": N = " + std::to_string(c.n) +
                   " gives fewer than one input channel a rank " + "at W = " + std::to_string(c.world_size) +
                   " (C = N/2 at most)";
        const Shape76 s = shape_of(c);
        const double in_numel = static_cast<double>(s.local_channels) * kTime * s.frame * s.frame;
        const double out_numel = static_cast<double>(s.channels) * out_positions(s);
        if (in_numel > kChunkLimit || out_numel > kChunkLimit)
            return info().stem + ": M = " + std::to_string(c.m) + " makes the input or output exceed 2^31 " +
                   "elements, where PKB convolves in channel chunks (not modelled); take a smaller M";
        return std::nullopt;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Shape76 s = shape_of(c);
        return {{"input", c.dtype, {1, s.local_channels, kTime, s.frame, s.frame}},
                {"weight", c.dtype, {s.channels, s.local_channels, kKernel, kKernel, kKernel}},
                {"bias", c.dtype, {s.channels}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Shape76 s = shape_of(c);
        const std::int64_t out = s.frame - kKernel + 1;
        return {{"output", c.dtype, {1, s.channels, kTime - kKernel + 1, out, out}}};
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"stride", 1.0}, {"padding", 0.0}, {"dilation", 1.0}, {"groups", 1.0}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const Shape76 s = shape_of(c);
        fill_random_inputs(
            c, info().id, rank, inputs,
            exact_amplitude(c.dtype, static_cast<int>(s.channels * kKernel * kKernel * kKernel)));
        fill_slice(inputs[2], 0, [&](std::uint64_t i) {
            return torch_linspace(-0.1, 0.1, s.channels, static_cast<std::int64_t>(i));
        });
    }
    WorkModel work(const ProblemConfig& c) const override {
        const Shape76 s = shape_of(c);
        const double e = elem_bytes(c), cs = static_cast<double>(s.channels);
        const double local = static_cast<double>(s.local_channels), taps = kKernel * kKernel * kKernel;
        const double out = cs * static_cast<double>(out_positions(s));
        const double in = local * kTime * static_cast<double>(s.frame * s.frame);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = out * e,
                .flops = 2 * out * local * taps,
                .memory_bytes = (in + cs * local * taps + cs + out) * e};
    }
};

} // namespace

const Problem& problem_76() {
    static const OpenSoraConv3dAllReduce problem;
    return problem;
}

} // namespace pkbw::problems
