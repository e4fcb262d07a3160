// PKB problem 53: FP8 (e4m3, delayed scaling) round trip of a flat parameter shard, then an all-gather
// of the shards; the updated amax history is returned too.
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kHistory = 16;

// PKB's shard size: P = max(64, min(M*64, 4096)).
std::int64_t shard(const ProblemConfig& c) {
    return std::max<std::int64_t>(64, std::min<std::int64_t>(c.m * 64, 4096));
}

class Fp8AllGatherParams final : public BasicProblem {
public:
    Fp8AllGatherParams()
        : BasicProblem({.id = 53,
                        .stem = "53_fp8_allgather_params",
                        .category = "TI",
                        .title = "FP8 round trip of a parameter shard, all-gather",
                        .description =
                            "Every rank holds flat_param_shard [P] (P = max(64, min(64M, 4096)), "
                            "standard normal) and amax_history [16] bf16 (1e-8). Its absmax is rolled "
                            "into the history, scale = max(history)/448, the shard goes through e4m3 "
                            "and back; every rank returns (the round-tripped shards of all ranks "
                            "concatenated [W*P] in D, its own updated history [16] bf16)."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"flat_param_shard", c.dtype, {shard(c)}}, {"amax_history", DType::BF16, {kHistory}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output_0", c.dtype, {c.world_size * shard(c)}}, {"output_1", DType::BF16, {kHistory}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        if (c.input_mode == InputMode::Exact) {
            fill_exact(inputs[0], input_rng(c, info().id, rank, 0), exact_amplitude(c.dtype, 1));
        } else {
            fill_normal(inputs[0], input_rng(c, info().id, rank, 0));
        }
        fill_constant(inputs[1], 1e-8);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double in = static_cast<double>(shard(c)) * elem_bytes(c);
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = in * c.world_size,
                .flops = 4.0 * static_cast<double>(shard(c)),
                .memory_bytes = 2 * in + in * c.world_size};
    }
};

} // namespace

const Problem& problem_53() {
    static const Fp8AllGatherParams problem;
    return problem;
}

} // namespace pkbw::problems
