// PKB problem 79: DINOv2's distributed k-NN evaluation: for each owner rank in turn, its queries are
// broadcast, every rank takes the top-k of their similarities with its train shard (with the labels), and
// the owner merges the W candidate lists into its own top-k. Labels of tied similarities depend on the tie
// rule (labelled_topk_host.h: the lower global train index first).
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/labelled_topk_host.h"
#include "problem_util.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace pkbw::problems {
namespace {

namespace tk = pkbw::tk;

// PKB's sizes: queries Q = max(32, min(M/64, 256)), train shard T = max(1024, min(16N/W, 16384)),
// features F = 384 (768 from N = 4096, 1024 from N = 8192), k = min(200, T).
struct Sizes {
    std::int64_t queries, train, features, k;
};
Sizes sizes_of(const ProblemConfig& c) {
    Sizes s;
    s.queries = std::max<std::int64_t>(32, std::min<std::int64_t>(c.m / 64, 256));
    s.train = std::max<std::int64_t>(1024, std::min<std::int64_t>(c.n * 16 / c.world_size, 16384));
    s.features = c.n >= 8192 ? 1024 : c.n >= 4096 ? 768 : 384;
    s.k = std::min<std::int64_t>(200, s.train);
    return s;
}

// PKB's features: randn in bf16, then F.normalize in bf16 (the norm rounded to bf16, each quotient rounded
// to bf16); rows of `dim`.
std::vector<double> normalized_bf16_rows(const CounterRng& rng, std::int64_t rows, std::int64_t dim) {
    std::vector<double> out(static_cast<std::size_t>(rows * dim));
    for (std::int64_t r = 0; r < rows; ++r) {
        double squares = 0;
        for (std::int64_t j = 0; j < dim; ++j) {
            const double x = tk::round_to(DType::BF16, rng.normal(static_cast<std::uint64_t>(r * dim + j)));
            out[static_cast<std::size_t>(r * dim + j)] = x;
            squares += x * x;
        }
        const double norm = tk::round_to(DType::BF16, std::max(std::sqrt(squares), 1e-12));
        for (std::int64_t j = 0; j < dim; ++j) {
            double& x = out[static_cast<std::size_t>(r * dim + j)];
            x = tk::round_to(DType::BF16, x / norm);
        }
    }
    return out;
}

constexpr const char* kDescription =
    "Every rank holds test_features_rank [Q, F] and train_features_rank_T [F, T] (rows of standard normals "
    "L2-normalised in bf16, then cast to the dtype; the train rows transposed) and train_labels_rank [1, T] "
    "int64 = (rank*T + j) % 1000; Q = max(32, min(M/64, 256)), T = max(1024, min(16N/W, 16384)), F = 384 "
    "(768 from N = 4096, 1024 from N = 8192), param max_k = k = min(200, T). Rank o returns the top-k "
    "similarities (in the dtype) of its queries over every rank's train shard and their labels: (output_0 "
    "[Q, "
    "k], output_1 [Q, k] int64), descending; ties: the lower global train index (rank*T + j) first.";

class DinoDistributedKnn final : public BasicProblem {
public:
    DinoDistributedKnn()
        : BasicProblem({.id = 79,
                        .stem = "79_dinov2_distributed_knn",
                        .category = "DOM",
                        .title = "DINOv2 distributed k-NN: per-rank top-k with labels, merged on the owner",
                        .description = kDescription}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Sizes s = sizes_of(c);
        return {{"test_features_rank", c.dtype, {s.queries, s.features}},
                {"train_features_rank_T", c.dtype, {s.features, s.train}},
                {"train_labels_rank", DType::I64, {1, s.train}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Sizes s = sizes_of(c);
        return {{"output_0", c.dtype, {s.queries, s.k}}, {"output_1", DType::I64, {s.queries, s.k}}};
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        return {{"max_k", static_cast<double>(sizes_of(c).k)}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const Sizes s = sizes_of(c);
        const CounterRng test_rng = input_rng(c, info().id, rank, 0),
                         train_rng = input_rng(c, info().id, rank, 1);
        if (c.input_mode == InputMode::Exact) { // k/4 with |k| <= 8: sims exact in an fp32 accumulation
            fill_exact(inputs[0], test_rng, 8);
            fill_exact(inputs[1], train_rng, 8);
        } else {
            fill_values(inputs[0], normalized_bf16_rows(test_rng, s.queries, s.features));
            const std::vector<double> rows = normalized_bf16_rows(train_rng, s.train, s.features);
            std::vector<double> transposed(rows.size());
            for (std::int64_t t = 0; t < s.train; ++t) {
                for (std::int64_t f = 0; f < s.features; ++f) {
                    transposed[static_cast<std::size_t>(f * s.train + t)] =
                        rows[static_cast<std::size_t>(t * s.features + f)];
                }
            }
            fill_values(inputs[1], transposed);
        }
        std::vector<double> labels(static_cast<std::size_t>(s.train));
        for (std::int64_t j = 0; j < s.train; ++j) {
            labels[static_cast<std::size_t>(j)] = static_cast<double>((rank * s.train + j) % 1000);
        }
        fill_values(inputs[2], labels);
    }
    // nccl-tests' all-gather of the queries (every rank's reach every rank); the W similarity GEMMs.
    WorkModel work(const ProblemConfig& c) const override {
        const Sizes s = sizes_of(c);
        const double w = c.world_size;
        WorkModel model;
        model.collective = CollectiveKind::AllGather;
        model.collective_bytes = w * static_cast<double>(s.queries * s.features) * elem_bytes(c);
        model.flops = 2.0 * w * static_cast<double>(s.queries * s.features * s.train);
        model.memory_bytes = static_cast<double>(s.features * s.train) * elem_bytes(c) +
                             w * static_cast<double>(s.queries * s.train) * elem_bytes(c);
        return model;
    }
    TieRowsByOutput tie_rows(const ProblemConfig& c, int rank,
                             const std::vector<Tensor>& inputs) const override;
};

// The rank's queries against every rank's train shard (rebuilt here), the similarities rounded to the
// dtype, concatenated in rank order: rows whose top-k labels depend on the tie rule.
TieRowsByOutput DinoDistributedKnn::tie_rows(const ProblemConfig& c, int rank,
                                             const std::vector<Tensor>& inputs) const {
    const Sizes s = sizes_of(c);
    const std::int64_t width = s.train * c.world_size;
    const std::vector<double> queries = tk::to_f64(inputs.at(0).data(), c.dtype, inputs.at(0).numel());
    std::vector<double> sims(static_cast<std::size_t>(s.queries * width));
    std::vector<long long> labels;
    for (int r = 0; r < c.world_size; ++r) {
        const std::vector<Tensor> rebuilt = r == rank ? std::vector<Tensor>{} : build_inputs(c, r);
        const std::vector<Tensor>& theirs = r == rank ? inputs : rebuilt;
        const std::vector<double> block =
            tk::gemm_rounded(queries, tk::to_f64(theirs.at(1).data(), c.dtype, theirs.at(1).numel()),
                             s.queries, s.train, s.features, c.dtype);
        for (std::int64_t q = 0; q < s.queries; ++q) {
            std::copy_n(block.begin() + q * s.train, s.train, sims.begin() + q * width + r * s.train);
        }
        const auto* shard_labels = theirs.at(2).data_as<long long>();
        labels.insert(labels.end(), shard_labels, shard_labels + s.train);
    }
    const std::vector<long long> rows = tk::labelled_tie_rows(sims, labels, s.queries, width, s.k);
    if (rows.empty()) {
        return {};
    }
    const std::string rule = "top-" + std::to_string(s.k) + " of the " + std::string(dtype_name(c.dtype)) +
                             " similarities: equal values with different labels in " +
                             std::to_string(rows.size()) + " of " + std::to_string(s.queries) + " queries";
    const std::vector<std::int64_t> tie(rows.begin(), rows.end());
    return {{"output_1", {tie, rule}}}; // equal similarities are equal whichever comes first: labels only
}

} // namespace

const Problem& problem_79() {
    static const DinoDistributedKnn problem;
    return problem;
}

} // namespace pkbw::problems
