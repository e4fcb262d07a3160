// PKB problem 44: blockwise int8 quantise-dequantise of a flat gradient (fp32, absmax/127 scales,
// round half to even), fp32 all-reduce, mean over ranks, cast back to D.
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

// PKB's sizes: n = max(M*N, W*64); block_size = min(128, max(16, max(N/4, 16))).
std::int64_t elements(const ProblemConfig& c) {
    return std::max<std::int64_t>(c.m * c.n, c.world_size * 64);
}
std::int64_t block_size(const ProblemConfig& c) {
    return std::min<std::int64_t>(128, std::max<std::int64_t>(16, std::max<std::int64_t>(c.n / 4, 16)));
}

class QuantizedGradAllReduce final : public BasicProblem {
public:
    QuantizedGradAllReduce()
        : BasicProblem({.id = 44,
                        .stem = "44_quantized_grad_allreduce",
                        .category = "TI",
                        .title = "Blockwise int8 quantised gradient all-reduce",
                        .description =
                            "Every rank holds flat_grad [max(M*N, 64W)] (standard normal). Each "
                            "block of block_size (min(128, max(16, N/4))) elements is quantised to "
                            "int8 with scale absmax/127 (fp32, round half to even) and dequantised; "
                            "the fp32 results are summed over ranks, divided by W and cast to D. "
                            "Every rank returns the same [n] tensor."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"flat_grad", c.dtype, {elements(c)}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {elements(c)}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        return {{"block_size", static_cast<double>(block_size(c))}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double n = static_cast<double>(elements(c));
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = 4 * n,
                .flops = 6 * n,
                .memory_bytes = 2 * n * elem_bytes(c)};
    }
};

} // namespace

const Problem& problem_44() {
    static const QuantizedGradAllReduce problem;
    return problem;
}

} // namespace pkbw::problems
