// PKB problem 10: row-sharded embedding table; fetch the rows of global indices from their owners.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

class EmbeddingLookup final : public BasicProblem {
public:
    EmbeddingLookup()
        : BasicProblem({.id = 10,
                        .stem = "10_embedding_lookup",
                        .category = "FCC",
                        .title = "Sharded embedding lookup by all-to-all",
                        .description =
                            "A [W*M, N] table is row-sharded: rank r holds rows [r*M, (r+1)*M) as "
                            "local_shard [M, N], plus M global indices (int64, uniform in [0, W*M)). "
                            "Every rank returns [M, N], the rows of its indices fetched from their "
                            "owners. Quirk kept: PKB's rows come back grouped by owner rank (owner 0 "
                            "first, the order of the indices kept within an owner), not in index "
                            "order."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"indices", DType::I64, {c.m}}, {"local_shard", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_integers(inputs[0], input_rng(c, info().id, rank, 0), 0, c.world_size * c.m);
        const CounterRng rng = input_rng(c, info().id, rank, 1);
        if (c.input_mode == InputMode::Exact) {
            fill_exact(inputs[1], rng, 8);
        } else {
            fill_normal(inputs[1], rng);
        }
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double rows = mn(c) * elem_bytes(c);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = rows,
                .flops = 0,
                .memory_bytes = static_cast<double>(c.m) * 8 + 2 * rows};
    }
};

} // namespace

const Problem& problem_10() {
    static const EmbeddingLookup problem;
    return problem;
}

} // namespace pkbw::problems
