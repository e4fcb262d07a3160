// PKB problem 68: a sparse feature fetch from a node-sharded embedding table and a projection: ids go to
// their owners (id / shard) by all-to-all, the owners gather their rows and send them back, the rows are
// put back in query order and multiplied by the rank's projection matrix.
#include "normal_fill.h"
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kPkbNodes = 111000000;

// PKB's table has max(111 M, M) rows (rounded up to a multiple of W), 56.8 GB in bf16 at 256 columns,
// which no host oracle holds: below M = 1024 pkbw scales it by (M/1024)^2 (433,593 rows at M = 64), so
// the default M = 1024 is PKB's table and a small M a small one. Columns E = 256 if N >= 256 else 128;
// queries Q = max(20000, min(M/W, 200000)) as PKB's.
struct Shape68 {
    std::int64_t nodes = 0, embed = 0, queries = 0;
    std::int64_t shard(int world) const { return nodes / world; }
};
Shape68 shape_of(const ProblemConfig& c) {
    const std::int64_t w = c.world_size;
    const std::int64_t nodes = c.m >= 1024 ? std::max(kPkbNodes, c.m)
                                           : std::max<std::int64_t>(1, kPkbNodes * c.m * c.m / (1024 * 1024));
    return {(nodes + w - 1) / w * w, c.n >= 256 ? 256 : 128,
            std::max<std::int64_t>(20000, std::min<std::int64_t>(c.m / w, 200000))};
}

class GnnSparseFeatureFetchProjection final : public BasicProblem {
public:
    GnnSparseFeatureFetchProjection()
        : BasicProblem(ProblemInfo{
              68, "68_gnn_sparse_feature_fetch_projection", "DOM",
              "GNN sparse feature fetch: ids to their owners, rows back by all-to-all, then a projection",
              "local_embedding_shard [S, E] (this rank's S = nodes/W rows, standard normal), input_node_ids "
              "[Q] "
              "int64 (owner (i + r) % W, row (7i + r) % S), proj_matrix [E, E]; owner = min(id / S, W - 1), "
              "a "
              "stable sort by owner, the ids exchanged, the owners' rows fetched and sent back, put back in "
              "query order: output [Q, E] = rows @ proj_matrix. E = 256 if N >= 256 else 128, Q = max(20000, "
              "min(M/W, 200000)), nodes = 111 M (PKB's) at M >= 1024, scaled by (M/1024)^2 below."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Shape68 s = shape_of(c);
        return {{"local_embedding_shard", c.dtype, {s.shard(c.world_size), s.embed}},
                {"input_node_ids", DType::I64, {s.queries}},
                {"proj_matrix", c.dtype, {s.embed, s.embed}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Shape68 s = shape_of(c);
        return {{"output", c.dtype, {s.queries, s.embed}}};
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        return {{"num_total_nodes", static_cast<double>(shape_of(c).nodes)}};
    }
    // The table and the projection from the rank's seed, element (row, col) of the table at counter
    // row·E + col (fill_normal's), so any fetched row can be drawn alone; the ids are PKB's formula. The
    // table by fill_normal_fast (the same values): 2.8e10 of them at PKB's size.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        for (int k : {0, 2}) {
            const CounterRng rng = input_rng(c, info().id, rank, k);
            Tensor& input = inputs[static_cast<std::size_t>(k)];
            if (c.input_mode == InputMode::Exact) {
                fill_exact(input, rng, 8);
            } else if (k == 0) {
                fill_normal_fast(input, rng);
            } else {
                fill_normal(input, rng);
            }
        }
        const Shape68 s = shape_of(c);
        const std::int64_t shard = s.shard(c.world_size);
        std::vector<double> ids(static_cast<std::size_t>(s.queries));
        for (std::int64_t i = 0; i < s.queries; ++i) {
            const std::int64_t owner = (i + rank) % c.world_size, row = (i * 7 + rank) % shard;
            ids[static_cast<std::size_t>(i)] = static_cast<double>(owner * shard + row);
        }
        fill_values(inputs[1], ids);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const Shape68 s = shape_of(c);
        const double rows = static_cast<double>(s.queries), e = static_cast<double>(s.embed),
                     bytes = elem_bytes(c);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = rows * (e * bytes + 8), // the ids out and the rows back
                .flops = 2 * rows * e * e,
                .memory_bytes = rows * (8 + 3 * e * bytes) + e * e * bytes};
    }
};

} // namespace

const Problem& problem_68() {
    static const GnnSparseFeatureFetchProjection problem;
    return problem;
}

} // namespace pkbw::problems
