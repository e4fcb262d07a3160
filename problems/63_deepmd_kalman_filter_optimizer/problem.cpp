// PKB problem 63: one step of DeePMD's Kalman-filter optimizer over 8 fp64 weight blocks of 1024 per
// rank: the innovation scalar tmp = sum(lambda + H^T P H) all-reduced, the gain K = P H, weight and
// covariance updates, every rank's new weights all-gathered, and the next lambda.
#include "problem_util.h"

#include <string>

namespace pkbw::problems {
namespace {

constexpr int kBlocks = 8;            // PKB's num_blocks
constexpr std::int64_t kBlock = 1024; // PKB's block

std::string item(const char* list, int i) {
    return std::string(list) + "[" + std::to_string(i) + "]";
}

class KalmanFilterOptimizer final : public BasicProblem {
public:
    KalmanFilterOptimizer()
        : BasicProblem(
              {.id = 63,
               .stem = "63_deepmd_kalman_filter_optimizer",
               .category = "DOM",
               .title = "DeePMD Kalman-filter optimizer step, fp64, with an all-gather of the weights",
               .description =
                   "Every rank holds 8 blocks: H[i] [1024, 1] (0.01 x normal), weights[i] [1024, 1] "
                   "(normal), P[i] [1024, 1024] (identity), all fp64, and an fp64 scalar error. tmp = "
                   "sum_i (lambda + H^T P H) is all-reduced, A = 1/tmp, K = P H, w += A err K, P = (P - "
                   "A K K^T) / lambda. Returns every rank's 8 new weight blocks (8W tensors, rank "
                   "order), the rank's 8 new P, and lambda_next = nue lambda + 1 - nue. Shapes are "
                   "PKB's constants (M, N and the dtype do not enter).",
               .mutates_inputs = true}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig&, int) const override {
        std::vector<TensorSpec> specs;
        for (int i = 0; i < kBlocks; ++i) {
            specs.push_back({item("H", i), DType::F64, {kBlock, 1}});
        }
        specs.push_back({"error", DType::F64, {}});
        for (int i = 0; i < kBlocks; ++i) {
            specs.push_back({item("weights", i), DType::F64, {kBlock, 1}});
        }
        for (int i = 0; i < kBlocks; ++i) {
            specs.push_back({item("P", i), DType::F64, {kBlock, kBlock}});
        }
        return specs;
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        std::vector<TensorSpec> specs;
        for (int j = 0; j < kBlocks * c.world_size; ++j) {
            specs.push_back({item("output_0", j), DType::F64, {kBlock, 1}});
        }
        for (int i = 0; i < kBlocks; ++i) {
            specs.push_back({item("output_1", i), DType::F64, {kBlock, kBlock}});
        }
        specs.push_back({"output_2", DType::F64, {}});
        return specs;
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const bool exact = c.input_mode == InputMode::Exact;
        for (int i = 0; i < kBlocks; ++i) {
            Tensor& h = inputs[i];
            Tensor& w = inputs[kBlocks + 1 + i];
            const CounterRng hr = input_rng(c, info().id, rank, i);
            const CounterRng wr = input_rng(c, info().id, rank, kBlocks + 1 + i);
            if (exact) {
                fill_exact(h, hr, 2); // k/4 stays exact through H^T H and K K^T in fp64
                fill_exact(w, wr, 8);
            } else {
                fill_normal(h, hr, 0.01);
                fill_normal(w, wr);
            }
            Tensor& p = inputs[2 * kBlocks + 1 + i];
            double* pd = p.mutable_data_as<double>();
            for (std::int64_t r = 0; r < kBlock; ++r) {
                for (std::int64_t q = 0; q < kBlock; ++q) {
                    pd[r * kBlock + q] = r == q ? 1.0 : 0.0;
                }
            }
        }
        const CounterRng er = input_rng(c, info().id, rank, kBlocks);
        if (exact) {
            fill_exact(inputs[kBlocks], er, 8);
        } else {
            fill_normal(inputs[kBlocks], er);
        }
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"kalman_lambda", 0.98}, {"kalman_nue", 0.9987}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double p = static_cast<double>(kBlock * kBlock);
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = 8.0 * kBlocks * kBlock * c.world_size,
                .flops = kBlocks * (4 * p + 4 * p),
                .memory_bytes = 8.0 * kBlocks * (2 * p + 4 * kBlock)};
    }
};

} // namespace

const Problem& problem_63() {
    static const KalmanFilterOptimizer problem;
    return problem;
}

} // namespace pkbw::problems
