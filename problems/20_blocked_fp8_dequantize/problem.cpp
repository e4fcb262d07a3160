// PKB problem 20: blocked dequantisation (y * s in fp32), then all-to-all of the chunks.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kBlock = 128;

class BlockedFp8Dequantize final : public BasicProblem {
public:
    BlockedFp8Dequantize()
        : BasicProblem({.id = 20,
                        .stem = "20_blocked_fp8_dequantize",
                        .category = "FCC",
                        .title = "Blocked dequantisation, then all-to-all",
                        .description =
                            "Rank r holds y [W, M, N] and per-block scales s [W, M*N/128] (both in "
                            "the dtype; PKB draws them from randn, they are not real fp8 values). "
                            "x = y * s in fp32, with element i scaled by flat scale i / 128; chunk "
                            "j of x goes to rank j. Every rank returns [W, M, N] fp32 whose chunk r "
                            "came from rank r. M*N must be a multiple of 128 (param "
                            "`block_size`)."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        return require_divides(info(), kBlock, "block_size", c.m * c.n, "M*N");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"local_y", c.dtype, {c.world_size, c.m, c.n}},
                {"local_s", c.dtype, {c.world_size, c.m * c.n / kBlock}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", DType::F32, {c.world_size, c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"block_size", static_cast<double>(kBlock)}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double all = mn(c) * c.world_size;
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = all * 4,
                .flops = all,
                .memory_bytes = all * elem_bytes(c) * (1.0 + 1.0 / kBlock) + all * 4};
    }
};

} // namespace

const Problem& problem_20() {
    static const BlockedFp8Dequantize problem;
    return problem;
}

} // namespace pkbw::problems
