// PKB problem 67: sparse embedding all-to-all: each (id, row) pair goes to the rank owning the id
// (id % W), in a stable order; the rows a rank receives are a variable number K (data-dependent), the
// first variable-length outputs of the suite (docs/solution-abi.md "Variable-length outputs").
#include "problem_util.h"

#include <algorithm>
#include <string>

namespace pkbw::problems {
namespace {

// PKB's sizes: num_nodes = round_up(max(100000, M), W); nnz = max(1024, min(M / W, 50000));
// hidden = max(8, min(N, 128)).
struct Sizes {
    std::int64_t num_nodes, nnz, hidden;
};
Sizes sizes_of(const ProblemConfig& c) {
    const std::int64_t base = std::max<std::int64_t>(100000, c.m);
    return {(base + c.world_size - 1) / c.world_size * c.world_size,
            std::max<std::int64_t>(1024, std::min<std::int64_t>(c.m / c.world_size, 50000)),
            std::max<std::int64_t>(8, std::min<std::int64_t>(c.n, 128))};
}

constexpr const char* kDescription =
    "Every rank holds idx [nnz] (int64 uniform in [0, num_nodes)) and value [nnz, hidden] (standard normal); "
    "num_nodes = round_up(max(100000, M), W), nnz = max(1024, min(M/W, 50000)), hidden = max(8, min(N, "
    "128)). "
    "Pair i goes to rank idx[i] % W (a stable partition by owner); rank p's outputs are the ids and rows it "
    "receives, in source-rank order and each source's original order: K of them, K data-dependent. Both "
    "outputs are variable-length with bound W*nnz: the solution reports K (ctx.set_output_length). W = 1 "
    "returns the inputs. Param num_nodes.";

class GnnSparseEmbedding final : public BasicProblem {
public:
    GnnSparseEmbedding()
        : BasicProblem({.id = 67,
                        .stem = "67_gnn_sparse_embedding_all2all",
                        .category = "DOM",
                        .title = "GNN sparse embedding all-to-all: route (id, row) pairs to id % W",
                        .description = kDescription}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Sizes s = sizes_of(c);
        return {{"idx", DType::I64, {s.nnz}}, {"value", c.dtype, {s.nnz, s.hidden}}};
    }
    // Both variable-length: at most every rank's nnz pairs arrive at one rank.
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Sizes s = sizes_of(c);
        const std::int64_t bound = s.nnz * c.world_size;
        return {{"output_0", DType::I64, {bound}, true}, {"output_1", c.dtype, {bound, s.hidden}, true}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs); // value from stream 1 (normal, or exact values)
        fill_integers(inputs[0], input_rng(c, info().id, rank, 0), 0, sizes_of(c).num_nodes); // idx
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        return {{"num_nodes", static_cast<double>(sizes_of(c).num_nodes)}};
    }
    // nccl-tests' alltoall over this rank's pairs (id and row); memory: read, pack, write.
    WorkModel work(const ProblemConfig& c) const override {
        const Sizes s = sizes_of(c);
        WorkModel model;
        model.collective = CollectiveKind::AllToAll;
        model.collective_bytes =
            static_cast<double>(s.nnz) * (static_cast<double>(s.hidden) * elem_bytes(c) + 8);
        model.memory_bytes = 3 * model.collective_bytes;
        return model;
    }
};

} // namespace

const Problem& problem_67() {
    static const GnnSparseEmbedding problem;
    return problem;
}

} // namespace pkbw::problems
