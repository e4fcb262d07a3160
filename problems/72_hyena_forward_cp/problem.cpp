// PKB problem 72: Hyena's long convolution under context parallelism: all-to-all from zigzag sequence
// shards to channel shards, z = x1 · (fftconv(x2 · v, h) + bias · (x2 · v)), all-to-all back, transpose.
#include "problem_util.h"

#include <cmath>

namespace pkbw::problems {
namespace {

// PKB's sizes are fixed (1 x 1024 channels x 2048 local samples, filters of 4096); pkbw takes channels
// = M, the local sequence = 2N and the filter length = 4N, so the defaults (M = N = 1024) are PKB's
// shape and --m/--n give a second one.
std::int64_t channels(const ProblemConfig& c) {
    return c.m;
}
std::int64_t local_seq(const ProblemConfig& c) {
    return 2 * c.n;
}
std::int64_t filter_len(const ProblemConfig& c) {
    return 4 * c.n;
}

double round_to_bf16(double v) {
    std::byte buf[2];
    f64_to_element(DType::BF16, v, buf);
    return element_to_f64(DType::BF16, buf);
}

// PKB's (torch.arange(count, dtype=bfloat16).reshape(...) / divisor).to(D): each integer rounded to bf16,
// the quotient rounded to bf16 again, then cast to D (exact).
void fill_bf16_arange_over(Tensor& t, double divisor) {
    std::vector<double> values(static_cast<std::size_t>(t.numel()));
    for (std::size_t i = 0; i < values.size(); ++i) {
        values[i] = round_to_bf16(round_to_bf16(static_cast<double>(i)) / divisor);
    }
    fill_values(t, values);
}

class HyenaForwardCp final : public BasicProblem {
public:
    HyenaForwardCp()
        : BasicProblem(
              {.id = 72,
               .stem = "72_hyena_forward_cp",
               .category = "SCP",
               .title = "Hyena long convolution with context parallelism (FFT conv between two all-to-alls)",
               .description =
                   "Every rank holds x1, x2, v [1, C, 2N] (its zigzag sequence chunks r and 2W-1-r, standard "
                   "normal), h [C, 4N] = arange(C*4N) in bf16 / 4N and conv_bias [C] = arange(C) in bf16 / C "
                   "(the same on every rank); C = M (PKB: 1024, 2048 local samples, filters of 4096 at the "
                   "default M = N = 1024). An all-to-all takes x1, x2, v to channel shards over the whole "
                   "sequence L = 2NW (zigzag order undone); z = x2 v (D), y = irfft(rfft(z, 2L) rfft(h, 2L) "
                   "/ "
                   "2L)[:L] + z bias in fp32, rounded to D, times x1 (D); an all-to-all back to the zigzag "
                   "shards; output [1, 2N, C] (transposed). W must divide C."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        return require_divides(info(), c.world_size, "W", channels(c), "the channel count C = M");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Shape seq = {1, channels(c), local_seq(c)};
        return {{"x1_seq", c.dtype, seq},
                {"x2_seq", c.dtype, seq},
                {"v_seq", c.dtype, seq},
                {"h", c.dtype, {channels(c), filter_len(c)}},
                {"conv_bias", c.dtype, {channels(c)}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {1, local_seq(c), channels(c)}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        for (int k = 0; k < 3; ++k) {
            const CounterRng rng = input_rng(c, info().id, rank, k);
            if (c.input_mode == InputMode::Exact) {
                fill_exact(inputs[static_cast<std::size_t>(k)], rng, 2);
            } else {
                fill_normal(inputs[static_cast<std::size_t>(k)], rng);
            }
        }
        fill_bf16_arange_over(inputs[3], static_cast<double>(filter_len(c)));
        fill_bf16_arange_over(inputs[4], static_cast<double>(channels(c)));
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        return {
            {"num_groups", static_cast<double>(channels(c))}, {"group_dim", 1}, {"with_zigzag_splitting", 1}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double elements = static_cast<double>(channels(c) * local_seq(c)), e = elem_bytes(c);
        const double n = 2.0 * static_cast<double>(local_seq(c)) * c.world_size; // the FFT length
        // Three real transforms of length n per local channel (~2.5 n log2 n each) and the pointwise work.
        const double transforms =
            static_cast<double>(channels(c)) / c.world_size * 3 * 2.5 * n * std::log2(n);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = 4 * elements * e,
                .flops = transforms + 6 * elements,
                .memory_bytes = 4 * elements * e + static_cast<double>(channels(c) * filter_len(c)) * e};
    }
};

} // namespace

const Problem& problem_72() {
    static const HyenaForwardCp problem;
    return problem;
}

} // namespace pkbw::problems
