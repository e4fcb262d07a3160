// PKB problem 17: rotary embedding of local q/k, then all-gather along the sequence.
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kHeads = 8;
constexpr std::int64_t kHeadDim = 64;

struct Dims {
    std::int64_t batch, seq_local;
};

Dims dims(const ProblemConfig& c) {
    const std::int64_t t = std::max<std::int64_t>(1, c.n / 64);
    return {std::max<std::int64_t>(1, c.m / 64), std::max<std::int64_t>(1, t / c.world_size)};
}

class RopeAllGather final : public BasicProblem {
public:
    RopeAllGather()
        : BasicProblem({.id = 17,
                        .stem = "17_rope_allgather",
                        .category = "SCP",
                        .title = "RoPE on local q/k, all-gather along the sequence",
                        .description =
                            "Rank r holds q, k [B, S, 8, 64] and cos, sin [B, S, 64] for its "
                            "sequence chunk (B = max(1, M/64), S = max(1, max(1, N/64)/W)). It "
                            "applies x*cos + rotate_half(x)*sin (each op rounded to the dtype) and "
                            "every rank returns (q_rot, k_rot), each [B, W*S, 8, 64], the chunks "
                            "concatenated along the sequence. W must divide 8 (the head count)."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        return require_divides(info(), c.world_size, "W", kHeads, "the head count");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Dims d = dims(c);
        const Shape qk{d.batch, d.seq_local, kHeads, kHeadDim};
        const Shape cs{d.batch, d.seq_local, kHeadDim};
        return {{"q_local", c.dtype, qk},
                {"k_local", c.dtype, qk},
                {"cos_local", c.dtype, cs},
                {"sin_local", c.dtype, cs}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Dims d = dims(c);
        const Shape out{d.batch, c.world_size * d.seq_local, kHeads, kHeadDim};
        return {{"output_0", c.dtype, out}, {"output_1", c.dtype, out}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const Dims d = dims(c);
        const double local = static_cast<double>(d.batch * d.seq_local * kHeads * kHeadDim);
        const double e = elem_bytes(c);
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = 2.0 * local * c.world_size * e,
                .flops = 2.0 * 3.0 * local,
                .memory_bytes = (2.0 * local + 2.0 * local / kHeads) * e + 2.0 * local * c.world_size * e};
    }
};

} // namespace

const Problem& problem_17() {
    static const RopeAllGather problem;
    return problem;
}

} // namespace pkbw::problems
