// PKB problem 19: per-128-element fp8 (e4m3) quantisation, then all-gather of values and scales.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kBlock = 128;

class BlockedFp8Quantize final : public BasicProblem {
public:
    BlockedFp8Quantize()
        : BasicProblem({.id = 19,
                        .stem = "19_blocked_fp8_quantize",
                        .category = "FCC",
                        .title = "Blocked fp8 quantisation, then all-gather",
                        .description =
                            "Rank r holds x [M, N]. Each run of 128 consecutive elements gets the "
                            "scale s = max|x| / 448 (fp32) and values y = x / s (s = 1 when 0) cast "
                            "to float8_e4m3fn. Every rank returns (y [W*M, N] e4m3, s [W*M, N/128] "
                            "fp32), all ranks' results stacked along rows. N must be a multiple of "
                            "128 (param `block_size`)."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        return require_divides(info(), kBlock, "block_size", c.n, "N");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"local_tensor", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output_0", DType::F8E4M3, {c.world_size * c.m, c.n}},
                {"output_1", DType::F32, {c.world_size * c.m, c.n / kBlock}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"block_size", static_cast<double>(kBlock)}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double local_out = mn(c) * (1.0 + 4.0 / kBlock);
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = local_out * c.world_size,
                .flops = 3.0 * mn(c),
                .memory_bytes = mn(c) * elem_bytes(c) + local_out * c.world_size};
    }
};

} // namespace

const Problem& problem_19() {
    static const BlockedFp8Quantize problem;
    return problem;
}

} // namespace pkbw::problems
