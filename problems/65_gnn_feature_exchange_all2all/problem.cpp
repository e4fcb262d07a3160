// PKB problem 65: GNN feature exchange: gather feature rows by seed ids, then a list all-to-all whose
// chunk lists are rotated by the rank (PKB's _shift).
#include "problem_util.h"

#include <algorithm>
#include <string>

namespace pkbw::problems {
namespace {

// PKB's sizes: rows_per_peer = max(64, min(M / W, 1024)); hidden = max(8, min(N, 128));
// local_features has seed = max(1, 3/4 * rows_per_peer * W) rows.
std::int64_t rows_per_peer(const ProblemConfig& c) {
    return std::max<std::int64_t>(64, std::min<std::int64_t>(c.m / c.world_size, 1024));
}
std::int64_t hidden(const ProblemConfig& c) {
    return std::max<std::int64_t>(8, std::min<std::int64_t>(c.n, 128));
}
std::int64_t seed_rows(const ProblemConfig& c) {
    return std::max<std::int64_t>(1, rows_per_peer(c) * c.world_size * 3 / 4);
}

class GnnFeatureExchange final : public BasicProblem {
public:
    GnnFeatureExchange()
        : BasicProblem({.id = 65,
                        .stem = "65_gnn_feature_exchange_all2all",
                        .category = "DOM",
                        .title = "GNN feature exchange: row gather, rotated all-to-all",
                        .description =
                            "Every rank holds local_features [S, hidden] (standard normal; "
                            "rows_per_peer R = max(64, min(M/W, 1024)), hidden = max(8, min(N, 128)), "
                            "S = 3RW/4) and seed_inverse_ids [R*W] (int64 uniform in [0, S)). It "
                            "gathers rows by the ids and exchanges R-row chunks with a list "
                            "all-to-all whose lists are rotated by the rank: rank p's output chunk c "
                            "is chunk (W-c) mod W of rank (p+c) mod W's gathered rows. Params "
                            "counts_sent and counts_received are lists (R per peer)."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"local_features", c.dtype, {seed_rows(c), hidden(c)}},
                {"seed_inverse_ids", DType::I64, {rows_per_peer(c) * c.world_size}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {rows_per_peer(c) * c.world_size, hidden(c)}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        if (c.input_mode == InputMode::Exact) {
            fill_exact(inputs[0], input_rng(c, info().id, rank, 0), exact_amplitude(c.dtype, 1));
        } else {
            fill_normal(inputs[0], input_rng(c, info().id, rank, 0));
        }
        fill_integers(inputs[1], input_rng(c, info().id, rank, 1), 0, seed_rows(c));
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const std::vector<double> counts(static_cast<std::size_t>(c.world_size),
                                         static_cast<double>(rows_per_peer(c)));
        std::map<std::string, double> params;
        add_list_param(params, "counts_sent", counts);
        add_list_param(params, "counts_received", counts);
        return params;
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double rows = static_cast<double>(rows_per_peer(c) * c.world_size);
        const double bytes = rows * static_cast<double>(hidden(c)) * elem_bytes(c);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = bytes,
                .flops = 0,
                .memory_bytes = 2 * bytes + rows * 8};
    }
};

} // namespace

const Problem& problem_65() {
    static const GnnFeatureExchange problem;
    return problem;
}

} // namespace pkbw::problems
