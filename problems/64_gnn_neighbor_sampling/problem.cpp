// PKB problem 64: distributed 2-hop neighbour sampling (PyG's distributed sampler): per hop, the frontier
// nodes go to their owners (node_to_rank), each owner takes the first `fanout` neighbours of every node it
// receives from its CSC graph, the samples come back and are put in frontier order, and the new nodes are
// deduplicated keeping first occurrences; the result is relabelled to local indices. Outputs are integer
// and variable-length (docs/solution-abi.md "Variable-length outputs").
#include "problem_util.h"

#include <algorithm>
#include <string>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kDegree = 16;         // PKB's neighbours per node
constexpr std::int64_t kFanouts[] = {10, 5}; // PKB's fanouts, hop by hop

// PKB's sizes: num_nodes = round_up(max(10000, min(M, 100000)), W), seeds S = max(512, min(N/W, 2048)).
struct Sizes {
    std::int64_t nodes, seeds;
};
Sizes sizes_of(const ProblemConfig& c) {
    const std::int64_t base = std::max<std::int64_t>(10000, std::min<std::int64_t>(c.m, 100000));
    return {(base + c.world_size - 1) / c.world_size * c.world_size,
            std::max<std::int64_t>(512, std::min<std::int64_t>(c.n / c.world_size, 2048))};
}
// At most every seed's fanout product of samples per hop: S·(f1 + f1·f2) edges, S more nodes.
std::int64_t edge_bound(const Sizes& s) {
    std::int64_t per_seed = 0, product = 1;
    for (const std::int64_t f : kFanouts) {
        product *= f;
        per_seed += product;
    }
    return s.seeds * per_seed;
}

// `count` distinct nodes of [0, nodes) in random order: the first `count` steps of a Fisher-Yates shuffle
// (count <= nodes).
std::vector<std::int64_t> distinct_nodes(const CounterRng& rng, std::int64_t nodes, std::int64_t count) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(nodes));
    for (std::int64_t v = 0; v < nodes; ++v) {
        all[static_cast<std::size_t>(v)] = v;
    }
    for (std::int64_t i = 0; i < count; ++i) {
        const std::int64_t j = rng.integer(static_cast<std::uint64_t>(i), i, nodes);
        std::swap(all[static_cast<std::size_t>(i)], all[static_cast<std::size_t>(j)]);
    }
    all.resize(static_cast<std::size_t>(count));
    return all;
}

constexpr const char* kDescription =
    "Every rank holds seed_nodes [S] = (rank*S + arange(S)) % n, and the whole CSC graph: local_adj_row_ptr "
    "[n + 1] = 16*arange, local_adj_col [16n] (node v's neighbours v+1..v+16 mod n), node_to_rank [n] = "
    "arange % W; n = round_up(max(10000, min(M, 100000)), W), S = max(512, min(N/W, 2048)); list param "
    "fanouts = [10, 5]. Per hop the frontier goes to its owners, each owner returns the first fanout "
    "neighbours (and edge ids) of each node it receives, the replies are put back in frontier order, and "
    "the new nodes are deduplicated keeping first occurrences. Outputs (all int64, variable-length): node "
    "(the seeds, then each hop's new nodes), row and col (each sampled edge's neighbour and frontier node as "
    "indices into node), edge ids. Exact mode: S distinct random seeds per rank and trial.";

class GnnNeighborSampling final : public BasicProblem {
public:
    GnnNeighborSampling()
        : BasicProblem({.id = 64,
                        .stem = "64_gnn_neighbor_sampling",
                        .category = "DOM",
                        .title = "GNN 2-hop neighbour sampling: route frontiers to owners, dedup, relabel",
                        .description = kDescription}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Sizes s = sizes_of(c);
        return {{"seed_nodes", DType::I64, {s.seeds}},
                {"local_adj_row_ptr", DType::I64, {s.nodes + 1}},
                {"local_adj_col", DType::I64, {s.nodes * kDegree}},
                {"node_to_rank", DType::I64, {s.nodes}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Sizes s = sizes_of(c);
        const std::int64_t edges = edge_bound(s);
        return {{"output_0", DType::I64, {s.seeds + edges}, true},
                {"output_1", DType::I64, {edges}, true},
                {"output_2", DType::I64, {edges}, true},
                {"output_3", DType::I64, {edges}, true}};
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        std::map<std::string, double> params;
        add_list_param(params, "fanouts", std::vector<double>(std::begin(kFanouts), std::end(kFanouts)));
        params["replace"] = 0; // PKB's replace=False (its sampler takes the first neighbours either way)
        return params;
    }
    // PKB's graph in both modes. The seeds: PKB's consecutive ones in pkb mode (PKB draws nothing); in exact
    // mode S distinct nodes drawn per rank and trial (every value is exact either way), whose neighbourhoods
    // overlap irregularly, so the dedup and the owner grouping see more than runs of consecutive ids.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const Sizes s = sizes_of(c);
        std::vector<std::int64_t> seeds(static_cast<std::size_t>(s.seeds)), colptr, col, owner;
        if (c.input_mode == InputMode::Exact) {
            seeds = distinct_nodes(input_rng(c, info().id, rank, 0), s.nodes, s.seeds);
        } else {
            for (std::int64_t i = 0; i < s.seeds; ++i) {
                seeds[static_cast<std::size_t>(i)] = (rank * s.seeds + i) % s.nodes;
            }
        }
        for (std::int64_t v = 0; v <= s.nodes; ++v) {
            colptr.push_back(v * kDegree);
        }
        for (std::int64_t v = 0; v < s.nodes; ++v) {
            for (std::int64_t j = 1; j <= kDegree; ++j) {
                col.push_back((v + j) % s.nodes);
            }
            owner.push_back(v % c.world_size);
        }
        fill_values(inputs[0], seeds);
        fill_values(inputs[1], colptr);
        fill_values(inputs[2], col);
        fill_values(inputs[3], owner);
    }
    // nccl-tests' alltoall over the sampled ids and edge ids coming back (the bulk of the traffic).
    WorkModel work(const ProblemConfig& c) const override {
        const double edges = static_cast<double>(edge_bound(sizes_of(c)));
        WorkModel model;
        model.collective = CollectiveKind::AllToAll;
        model.collective_bytes = 2 * 8 * edges;
        model.memory_bytes = 4 * 8 * edges;
        return model;
    }
};

} // namespace

const Problem& problem_64() {
    static const GnnNeighborSampling problem;
    return problem;
}

} // namespace pkbw::problems
