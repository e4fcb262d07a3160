// PKB problem 66: the backward of 65's exchange: gradient rows come back through the same rotated list
// all-to-all, then are summed into the seed rows they were gathered from (PKB's sparse COO matmul, a
// scatter-add). Inputs and output are float32 whatever --dtype says, as PKB's are.
#include "problem_util.h"

#include <algorithm>
#include <string>

namespace pkbw::problems {
namespace {

// rows_per_peer R = max(64, min(M/W, 1024)) (as 65), hidden = max(8, min(N, 128)), seed_size = max(1, R*W/2).
struct Shape66 {
    std::int64_t rows_per_peer = 0, hidden = 0;
    std::int64_t rows(int world) const { return rows_per_peer * world; }
    std::int64_t seeds(int world) const { return std::max<std::int64_t>(1, rows(world) / 2); }
};
Shape66 shape_of(const ProblemConfig& c) {
    return {std::max<std::int64_t>(64, std::min<std::int64_t>(c.m / c.world_size, 1024)),
            std::max<std::int64_t>(8, std::min<std::int64_t>(c.n, 128))};
}

class GnnFeatureExchangeBackward final : public BasicProblem {
public:
    GnnFeatureExchangeBackward()
        : BasicProblem(ProblemInfo{66, "66_gnn_feature_exchange_all2all_backward", "DOM",
                                   "GNN feature exchange backward: rotated all-to-all, scatter-add to seeds",
                                   "grad_output [R*W, hidden] f32 and seed_inverse_ids [R*W] in [0, S); 65's "
                                   "rotated exchange, then "
                                   "output [S, hidden] f32 = the sum of the received rows per seed id "
                                   "(README.md has PKB's sizes)."}) {}

    WorkModel work(const ProblemConfig& c) const override {
        const Shape66 s = shape_of(c);
        WorkModel model;
        model.collective = CollectiveKind::AllToAll;
        model.collective_bytes = static_cast<double>(s.rows(c.world_size) * s.hidden * 4);
        model.flops = model.collective_bytes / 4; // one add per received element
        model.memory_bytes = 3 * model.collective_bytes;
        return model;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Shape66 s = shape_of(c);
        return {{"grad_output", DType::F32, {s.rows(c.world_size), s.hidden}},
                {"seed_inverse_ids", DType::I64, {s.rows(c.world_size)}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Shape66 s = shape_of(c);
        return {{"output", DType::F32, {s.seeds(c.world_size), s.hidden}}};
    }
    // R rows to and from every peer (PKB's equal lists), and the seed table's size.
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const Shape66 s = shape_of(c);
        std::map<std::string, double> params;
        for (const char* name : {"counts_sent", "counts_received"}) {
            add_list_param(
                params, name,
                std::vector<double>(static_cast<std::size_t>(c.world_size), double(s.rows_per_peer)));
        }
        params["seed_size"] = static_cast<double>(s.seeds(c.world_size));
        return params;
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs); // grad_output from stream 0 (normal, or exact values)
        fill_integers(inputs[1], input_rng(c, info().id, rank, 1), 0, shape_of(c).seeds(c.world_size));
    }
};

} // namespace

const Problem& problem_66() {
    static const GnnFeatureExchangeBackward problem;
    return problem;
}

} // namespace pkbw::problems
