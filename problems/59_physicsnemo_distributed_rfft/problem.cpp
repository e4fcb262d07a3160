// PKB problem 59: PhysicsNeMo's distributed 2-D real FFT over [B, H, Wd] split along the width: a
// complex FFT over H, an all-to-all from width shards to H shards, a complex FFT over the width, the
// first Wd/2 + 1 bins kept. Input float32 and output complex64 whatever --dtype says, as PKB's are.
#include "problem_util.h"

#include <algorithm>
#include <cmath>

namespace pkbw::problems {
namespace {

// PKB's sizes: B = max(1, M/64), H = max(16, M) and Wd = max(16, N), each rounded up to a multiple of W.
struct Shape59 {
    std::int64_t batch = 0, height = 0, width = 0;
    std::int64_t bins() const { return width / 2 + 1; }
};
std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
    return (value + multiple - 1) / multiple * multiple;
}
Shape59 shape_of(const ProblemConfig& c) {
    return {std::max<std::int64_t>(1, c.m / 64), round_up(std::max<std::int64_t>(16, c.m), c.world_size),
            round_up(std::max<std::int64_t>(16, c.n), c.world_size)};
}

class PhysicsNemoDistributedRfft final : public BasicProblem {
public:
    PhysicsNemoDistributedRfft()
        : BasicProblem(ProblemInfo{
              59, "59_physicsnemo_distributed_rfft", "DOM",
              "Distributed 2-D real FFT: FFT over H, all-to-all to H shards, FFT over the width",
              "x [B, H, Wd/W] f32 is this rank's width shard of one standard-normal [B, H, Wd] field (the "
              "same "
              "draw on every rank); B = max(1, M/64), H = max(16, M) and Wd = max(16, N) rounded up to "
              "multiples "
              "of W. fft over H (ortho), an all-to-all of H chunks, the chunks concatenated along the width, "
              "fft over the width (ortho), the first Wd/2 + 1 bins: output complex64 [B, H/W, Wd/2 + 1]."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Shape59 s = shape_of(c);
        return {{"x", DType::F32, {s.batch, s.height, s.width / c.world_size}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Shape59 s = shape_of(c);
        return {{"output", DType::C64, {s.batch, s.height / c.world_size, s.bins()}}};
    }
    // PKB's arguments s = (H, Wd) and dim = (1, 2); norm is "ortho" (a string: not a param, fixed).
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const Shape59 s = shape_of(c);
        std::map<std::string, double> params;
        add_list_param(params, "s", {static_cast<double>(s.height), static_cast<double>(s.width)});
        add_list_param(params, "dim", {1, 2});
        return params;
    }
    // One field drawn from rank 0's seed (PKB's _seed(59, 0, trial)); this rank's columns of it, element
    // (b, h, w) of the field at counter b·H·Wd + h·Wd + w.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const Shape59 s = shape_of(c);
        const std::int64_t local = s.width / c.world_size;
        const CounterRng rng = input_rng(c, info().id, 0, 0);
        std::vector<double> values(static_cast<std::size_t>(s.batch * s.height * local));
        for (std::int64_t row = 0; row < s.batch * s.height; ++row) {
            for (std::int64_t w = 0; w < local; ++w) {
                const auto at = static_cast<std::uint64_t>(row * s.width + rank * local + w);
                values[static_cast<std::size_t>(row * local + w)] =
                    c.input_mode == InputMode::Exact ? 0.25 * static_cast<double>(rng.integer(at, -8, 9))
                                                     : rng.normal(at);
            }
        }
        fill_values(inputs[0], values);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const Shape59 s = shape_of(c);
        const double local = static_cast<double>(s.batch * s.height * s.width) / c.world_size;
        const double h = static_cast<double>(s.height), wd = static_cast<double>(s.width);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = local * 8,                       // the complex64 shard exchanged
                .flops = 5 * local * (std::log2(h) + std::log2(wd)), // two complex FFTs, 5 n log2 n each
                .memory_bytes =
                    local * 4 + static_cast<double>(s.batch * (s.height / c.world_size) * s.bins()) * 8};
    }
};

} // namespace

const Problem& problem_59() {
    static const PhysicsNemoDistributedRfft problem;
    return problem;
}

} // namespace pkbw::problems
