// PKB problem 85: distributed sample sort: every rank sorts its shard, regular samples choose W - 1
// splitters, the buckets go to their ranks (a variable all-to-all), each rank merges what it received,
// and a second variable all-to-all rebalances so that rank r returns exactly the r-th slice of the
// global sort. The slice's length depends only on the config (balanced_range of the total).
#include "pkbw/toolkit/sample_sort.h"
#include "problem_util.h"

#include <algorithm>
#include <string>

namespace pkbw::problems {
namespace {

// PKB's shard size: max(4W, min(M / W, 4096)), and none on odd ranks when trial % 4 == 3.
std::int64_t shard_size(const ProblemConfig& c, int rank) {
    if (c.trial % 4 == 3 && rank % 2 == 1) {
        return 0;
    }
    return std::max<std::int64_t>(4 * c.world_size, std::min<std::int64_t>(c.m / c.world_size, 4096));
}
std::int64_t total_size(const ProblemConfig& c) {
    std::int64_t total = 0;
    for (int r = 0; r < c.world_size; ++r) {
        total += shard_size(c, r);
    }
    return total;
}

constexpr const char* kDescription =
    "Rank r holds local_shard [n_r]: n_r = max(4W, min(M/W, 4096)), 0 on odd ranks when trial % 4 == 3; "
    "values randint(-50, 50) in the dtype minus r * max(1, n_r) (rounded to the dtype). PKB sorts the "
    "shards with a sample sort (local sort, one regular sample per active rank, W - 1 splitters, a "
    "variable all-to-all of the buckets, a merge) and rebalances with a second variable all-to-all, so "
    "that rank r returns [len_r] in the dtype: elements [start_r, start_r + len_r) of the ascending "
    "global sort, start_r = r * (T / W) + min(r, T % W), len_r = T / W + (r < T % W), T = sum of n_r.";

class SampleSort final : public BasicProblem {
public:
    SampleSort()
        : BasicProblem({.id = 85,
                        .stem = "85_distributed_sample_sort",
                        .category = "DOM",
                        .title = "Distributed sample sort: rank r returns the r-th slice of the global sort",
                        .description = kDescription}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int rank) const override {
        return {{"local_shard", c.dtype, {shard_size(c, rank)}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int rank) const override {
        return {{"output", c.dtype, {tk::balanced_range(rank, c.world_size, total_size(c)).size()}}};
    }
    // Integers below 2^8 are exact in every floating dtype; the shift by the rank rounds as torch's
    // subtraction on a D tensor does (bf16 spaces values 32 apart above 4096). Exact mode: the same.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        Tensor& shard = inputs[0];
        fill_integers(shard, input_rng(c, info().id, rank, 0), -50, 50);
        const double shift = static_cast<double>(rank) * std::max<std::int64_t>(1, shard.numel());
        std::vector<double> values(static_cast<std::size_t>(shard.numel()));
        for (std::int64_t i = 0; i < shard.numel(); ++i) {
            values[static_cast<std::size_t>(i)] = shard.get_f64(i) - shift;
        }
        fill_values(shard, values);
    }
    // Two all-to-alls of (about) the shard; memory: read, sort, merge and write it a few times.
    WorkModel work(const ProblemConfig& c) const override {
        const double bytes = static_cast<double>(total_size(c)) / c.world_size * elem_bytes(c);
        WorkModel model;
        model.collective = CollectiveKind::AllToAll;
        model.collective_bytes = 2 * bytes;
        model.memory_bytes = 6 * bytes;
        return model;
    }
};

} // namespace

const Problem& problem_85() {
    static const SampleSort problem;
    return problem;
}

} // namespace pkbw::problems
