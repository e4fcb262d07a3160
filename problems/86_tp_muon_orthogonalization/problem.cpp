// PKB problem 86: Muon's Newton-Schulz orthogonalisation of a column-sharded matrix.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kRows = 512;
// PKB's "quintic" table: (a, b, c) per step, cycled.
constexpr double kQuintic[5][3] = {{4.0848, -6.8946, 2.9270},
                                   {3.9505, -6.3029, 2.6377},
                                   {3.7418, -5.5913, 2.3037},
                                   {2.8769, -3.1427, 1.2046},
                                   {2.8366, -3.0525, 1.2012}};

// PKB: 512 global columns (1024 when N >= 4096), rounded up to a multiple of W.
std::int64_t local_cols(const ProblemConfig& c) {
    const std::int64_t global = c.n < 4096 ? 512 : 1024;
    return (global + c.world_size - 1) / c.world_size;
}

class TpMuon final : public BasicProblem {
public:
    TpMuon()
        : BasicProblem(
              {.id = 86,
               .stem = "86_tp_muon_orthogonalization",
               .category = "TI",
               .title = "Tensor-parallel Muon orthogonalisation",
               .description =
                   "Rank r holds columns [512, G/W] of a bf16 matrix (G = 512, or 1024 when N >= 4096, "
                   "rounded up to W). In fp32: X is divided by its all-reduced Frobenius norm "
                   "(clamped at 1e-7), then 5 Newton-Schulz steps X = a X + (b A + c A A) X with "
                   "the all-reduced Gram A = X Xᵀ [512, 512] and PKB's quintic (a, b, c) table; "
                   "returns X in bf16 [512, G/W]. fp32 GEMMs without TF32. bf16 whatever the dtype; "
                   "M is not used."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"x", DType::BF16, {kRows, local_cols(c)}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", DType::BF16, {kRows, local_cols(c)}}};
    }
    // PKB: randn in bf16 per rank, then + 0.01·rank (a bf16 op: rounded again).
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_normal(inputs[0], input_rng(c, info().id, rank, 0));
        Tensor& x = inputs[0];
        for (std::int64_t i = 0; i < x.numel(); ++i) {
            std::byte* p = x.mutable_data() + i * 2;
            f64_to_element(DType::BF16, element_to_f64(DType::BF16, p) + 0.01 * rank, p);
        }
    }
    // steps and partition_dim as PKB passes them; the coefficient table (PKB's string "quintic"
    // names it) as list param `coefficients` = [a0, b0, c0, a1, ...].
    std::map<std::string, double> params(const ProblemConfig&) const override {
        std::map<std::string, double> p = {{"steps", 5}, {"partition_dim", 1}};
        std::vector<double> table;
        for (const auto& abc : kQuintic) {
            table.insert(table.end(), abc, abc + 3);
        }
        add_list_param(p, "coefficients", table);
        return p;
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double k = static_cast<double>(local_cols(c)), r = static_cast<double>(kRows);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = 5.0 * r * r * 4 + 4,
                .flops = 5.0 * (2 * r * r * k + 2 * r * r * r + 2 * r * r * k),
                .memory_bytes = 2.0 * r * k * 2};
    }
};

} // namespace

const Problem& problem_86() {
    static const TpMuon problem;
    return problem;
}

} // namespace pkbw::problems
