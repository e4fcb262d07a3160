// PKB problem 48: an FFN on a 2-D (TP x FSDP) grid. The weights are sharded over both axes; each rank
// gathers its TP column slice of W1/W2 and row slice of W3 over the FSDP group, computes
// z = silu(x W1) * (x W2) and y = z W3, and sums y over the TP group.
#include "problem_util.h"
#include "shared_inputs.h"

#include <numeric>

namespace pkbw::problems {
namespace {

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
    return (value + multiple - 1) / multiple * multiple;
}

// PKB's _factor_tp_fsdp and the shapes of its input generator, all functions of (W, M, N).
struct Grid {
    int n_tp = 1, n_fsdp = 1;
    std::int64_t d = 0, d_ff = 0, b_total = 0;

    explicit Grid(const ProblemConfig& c) {
        const int w = c.world_size;
        n_fsdp = w;
        for (int tp = 2; tp < w; ++tp) {
            if (w % tp == 0 && w / tp >= 2) {
                n_tp = tp;
                n_fsdp = w / tp;
                break;
            }
        }
        d = round_up(std::max<std::int64_t>(32, std::min<std::int64_t>(c.n, 256)), std::lcm(n_tp, n_fsdp));
        d_ff = round_up(std::max<std::int64_t>(64, c.m), n_tp);
        b_total = round_up(std::max<std::int64_t>(2 * c.m, 2 * w), n_fsdp);
    }
    std::int64_t b_local() const { return b_total / n_fsdp; }
    int tp_rank(int rank) const { return rank % n_tp; }
    int fsdp_rank(int rank) const { return rank / n_tp; }
};

// Rank `rank`'s block [row0, row0 + rows) x [col0, col0 + cols) of a shared [*, full_cols] draw.
void fill_block(const ProblemConfig& c, Tensor& t, int stream, std::int64_t row0, std::int64_t col0,
                std::int64_t full_cols) {
    const CounterRng rng = input_rng(c, 48, 0, stream); // PKB seeds every rank with rank 0
    const std::int64_t cols = t.shape().back();
    fill_slice(t, 0, [&](std::uint64_t i) {
        const std::int64_t r = row0 + static_cast<std::int64_t>(i) / cols;
        const std::int64_t k = col0 + static_cast<std::int64_t>(i) % cols;
        const std::uint64_t g = static_cast<std::uint64_t>(r * full_cols + k);
        if (c.input_mode == InputMode::Exact) {
            return 0.25 * static_cast<double>(rng.integer(g, -2, 3));
        }
        return rng.normal(g);
    });
}

class FsdpAndTp final : public BasicProblem {
public:
    FsdpAndTp()
        : BasicProblem(
              {.id = 48,
               .stem = "48_fsdp_and_tp",
               .category = "TI",
               .title = "SwiGLU FFN on a TP x FSDP grid: FSDP all-gathers, TP all-reduce",
               .description =
                   "W = n_tp * n_fsdp (PKB's factoring: the smallest n_tp >= 2 leaving n_fsdp >= 2, "
                   "else 1 x W). TP groups are n_tp consecutive ranks, FSDP groups ranks n_tp apart. "
                   "Rank r holds x [B/n_fsdp, D] (its FSDP row block), W1/W2 blocks [D/n_fsdp, "
                   "D_ff/n_tp] and a W3 block [D_ff/n_tp, D/n_fsdp]; it all-gathers W1/W2 along dim 0 "
                   "and W3 along dim 1 over its FSDP group, computes y = (silu(x W1) * (x W2)) W3 and "
                   "all-reduces y over its TP group. D = 32..256 from N, D_ff = max(64, M), "
                   "B = max(2M, 2W).",
               .mutates_inputs = false}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Grid g(c);
        const std::int64_t dr = g.d / g.n_fsdp, dc = g.d_ff / g.n_tp;
        return {{"x_local", c.dtype, {g.b_local(), g.d}},
                {"W1_shard", c.dtype, {dr, dc}},
                {"W2_shard", c.dtype, {dr, dc}},
                {"W3_shard", c.dtype, {dc, dr}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Grid g(c);
        return {{"output", c.dtype, {g.b_local(), g.d}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const Grid g(c);
        const int tp = g.tp_rank(rank), fs = g.fsdp_rank(rank);
        const std::int64_t dr = g.d / g.n_fsdp, dc = g.d_ff / g.n_tp;
        fill_block(c, inputs[0], 0, fs * g.b_local(), 0, g.d);
        fill_block(c, inputs[1], 1, fs * dr, tp * dc, g.d_ff);
        fill_block(c, inputs[2], 2, fs * dr, tp * dc, g.d_ff);
        fill_block(c, inputs[3], 3, tp * dc, fs * dr, g.d);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const Grid g(c);
        return {{"n_tp", static_cast<double>(g.n_tp)}, {"n_fsdp", static_cast<double>(g.n_fsdp)}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const Grid g(c);
        const double e = elem_bytes(c);
        const double b = static_cast<double>(g.b_local()), d = static_cast<double>(g.d);
        const double dc = static_cast<double>(g.d_ff / g.n_tp);
        // Three gathered weight slices [D, D_ff/n_tp]; the FLOPs are the three GEMMs.
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = 3 * d * dc * e,
                .flops = 3 * 2 * b * d * dc,
                .memory_bytes = (2 * b * d + 3 * d * dc) * e};
    }
};

} // namespace

const Problem& problem_48() {
    static const FsdpAndTp problem;
    return problem;
}

} // namespace pkbw::problems
