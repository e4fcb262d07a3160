// PKB problem 69: GNN link-prediction ranking: every rank's positive scores and their negatives are
// all-gathered (PKB's all_to_all_single used as an all-gatherv, sizes by an all-reduce), then each positive's
// 1-based rank among sigmoid(cat(pos, neg)) sorted descending. Integer output decided by ties in the dtype:
// the rule is toolkit/positive_rank.h's (the positive first among equal values).
#include "pkbw/toolkit/positive_rank_host.h"
#include "problem_util.h"

#include <algorithm>
#include <string>

namespace pkbw::problems {
namespace {

namespace tk = pkbw::tk;

// PKB's sizes: num_pos = max(16, min(M/W, 1280)) + rank % 3 on each rank, num_neg = max(100, min(N, 1000)).
std::int64_t positives_of(const ProblemConfig& c, int rank) {
    return std::max<std::int64_t>(16, std::min<std::int64_t>(c.m / c.world_size, 1280)) + rank % 3;
}
std::int64_t negatives_of(const ProblemConfig& c) {
    return std::max<std::int64_t>(100, std::min<std::int64_t>(c.n, 1000));
}
std::int64_t all_positives(const ProblemConfig& c) {
    std::int64_t total = 0;
    for (int r = 0; r < c.world_size; ++r) {
        total += positives_of(c, r);
    }
    return total;
}

constexpr const char* kDescription =
    "Every rank holds local_pos_scores [P_r] and local_neg_scores [P_r, n] (standard normal, in the dtype), "
    "P_r = max(16, min(M/W, 1280)) + rank % 3, n = max(100, min(N, 1000)). Both are all-gathered in rank "
    "order (P = sum of P_r rows); every rank returns int64 [P]: for each row, the 1-based position of the "
    "positive in sigmoid(cat(pos, neg)) sorted descending. Sigmoid is rounded to the dtype; ties: the "
    "positive comes first among equal values (rank = 1 + negatives strictly above it).";

class GnnNegativeScoring final : public BasicProblem {
public:
    GnnNegativeScoring()
        : BasicProblem({.id = 69,
                        .stem = "69_gnn_negative_scoring",
                        .category = "DOM",
                        .title = "GNN negative scoring: all-gatherv of scores, rank of each positive",
                        .description = kDescription}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int rank) const override {
        const std::int64_t rows = positives_of(c, rank);
        return {{"local_pos_scores", c.dtype, {rows}},
                {"local_neg_scores", c.dtype, {rows, negatives_of(c)}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", DType::I64, {all_positives(c)}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs); // normal, or exact values (ties by design)
    }
    // nccl-tests' all-gather of every rank's scores (the gathered rows), one compare per gathered score.
    WorkModel work(const ProblemConfig& c) const override {
        const double scores = static_cast<double>(all_positives(c) * (1 + negatives_of(c)));
        WorkModel model;
        model.collective = CollectiveKind::AllGather;
        model.collective_bytes = scores * elem_bytes(c);
        model.flops = 2 * scores; // a sigmoid and a compare per score
        model.memory_bytes = model.collective_bytes + 8.0 * static_cast<double>(all_positives(c));
        return model;
    }
    // Every rank returns the ranks of all P positives, so every rank's inputs decide the tie rows.
    TieRowsByOutput tie_rows(const ProblemConfig& c, int rank,
                             const std::vector<Tensor>& inputs) const override {
        std::vector<std::int64_t> rows;
        std::int64_t first_row = 0;
        for (int r = 0; r < c.world_size; ++r) {
            const std::vector<Tensor> rebuilt = r == rank ? std::vector<Tensor>{} : build_inputs(c, r);
            const std::vector<Tensor>& mine = r == rank ? inputs : rebuilt;
            const tk::PositiveRanks ranks = tk::positive_ranks_f64(
                c.dtype, tk::to_f64(mine.at(0).data(), c.dtype, mine.at(0).numel()),
                tk::to_f64(mine.at(1).data(), c.dtype, mine.at(1).numel()), negatives_of(c));
            for (std::size_t i = 0; i < ranks.ties.size(); ++i) {
                if (ranks.ties[i] > 0) {
                    rows.push_back(first_row + static_cast<std::int64_t>(i));
                }
            }
            first_row += positives_of(c, r);
        }
        if (rows.empty()) {
            return {};
        }
        const std::string rule = "sigmoid in " + std::string(dtype_name(c.dtype)) +
                                 ": a negative equals the positive (ranked first among them) in " +
                                 std::to_string(rows.size()) + " rows";
        return {{"output", {std::move(rows), rule}}};
    }
};

} // namespace

const Problem& problem_69() {
    static const GnnNegativeScoring problem;
    return problem;
}

} // namespace pkbw::problems
