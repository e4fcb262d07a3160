// PKB problem 70: TorchRec's KeyedJaggedTensor all-to-all: each rank's features go, by key_splits, to
// their owner ranks (lengths and values by all-to-allv), then the received segments are regrouped
// feature-major (TorchRec's recat). The values' count is data-dependent: a variable-length output.
#include "problem_util.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kMinLength = 5, kMaxLength = 20; // PKB: randint(5, 21)

// PKB's sizes: key_splits[d] = 1 + d % 3 features go to rank d; batch_size = max(512, min(M / W, 1024)).
std::vector<std::int64_t> key_splits(int world) {
    std::vector<std::int64_t> splits;
    for (int d = 0; d < world; ++d) {
        splits.push_back(1 + d % 3);
    }
    return splits;
}
std::int64_t batch(const ProblemConfig& c) {
    return std::max<std::int64_t>(512, std::min<std::int64_t>(c.m / c.world_size, 1024));
}
std::int64_t features(int world) {
    const auto splits = key_splits(world);
    return std::accumulate(splits.begin(), splits.end(), std::int64_t{0});
}

// The lengths a rank holds: drawn here for the values' count as well as for its inputs.
Tensor draw_lengths(const ProblemConfig& c, int rank) {
    Tensor lengths = Tensor::zeros(DType::I64, {features(c.world_size) * batch(c)});
    fill_integers(lengths, input_rng(c, 70, rank, 0), kMinLength, kMaxLength + 1);
    return lengths;
}

// nccl-tests' alltoall over a rank's lengths and its values (about 12.5 per entry).
WorkModel kjt_work(const ProblemConfig& c) {
    const double entries = static_cast<double>(features(c.world_size) * batch(c));
    WorkModel model;
    model.collective = CollectiveKind::AllToAll;
    model.collective_bytes = entries * 8 * (1 + (kMinLength + kMaxLength) / 2.0);
    model.memory_bytes = 3 * model.collective_bytes;
    return model;
}

constexpr const char* kDescription =
    "Every rank holds lengths [F*B] (int64 uniform in [5, 20], feature-major: F = sum(key_splits) features "
    "of B = max(512, min(M/W, 1024)) entries) and values [sum(lengths)] (int64 in [0, 10^6)); "
    "key_splits[d] = 1 + d % 3 features go to rank d. Rank p receives its features' lengths and values "
    "from every rank (all-to-allv), regrouped feature-major (for each of its features, each source rank "
    "in order: TorchRec's recat), and returns the dict {lengths [ks_p*W*B], values [K] (variable length, "
    "bound ks_p*W*B*20), stride = W*B (0-dim), stride_per_rank = [B]*W}. Params key_splits (list), "
    "batch_size.";

ProblemInfo kjt_info() {
    ProblemInfo info;
    info.id = 70;
    info.stem = "70_torchrec_kjt_all2all";
    info.category = "DOM";
    info.title = "TorchRec KJT all-to-all: jagged lengths and values to feature owners";
    info.description = kDescription;
    return info;
}

class KjtAllToAll final : public BasicProblem {
public:
    KjtAllToAll()
        : BasicProblem(kjt_info()) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int rank) const override {
        const Tensor lengths = draw_lengths(c, rank);
        const auto* l = lengths.data_as<std::int64_t>();
        const std::int64_t values = std::accumulate(l, l + lengths.numel(), std::int64_t{0});
        return {{"lengths", DType::I64, lengths.shape()}, {"values", DType::I64, {values}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int rank) const override {
        const std::int64_t rows =
            key_splits(c.world_size)[static_cast<std::size_t>(rank)] * c.world_size * batch(c);
        return {{"lengths", DType::I64, {rows}},
                {"values", DType::I64, {rows * kMaxLength}, true},
                {"stride", DType::I64, {}},
                {"stride_per_rank", DType::I64, {c.world_size}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        inputs[0] = draw_lengths(c, rank);
        fill_integers(inputs[1], input_rng(c, info().id, rank, 1), 0, 1000000);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const auto splits = key_splits(c.world_size);
        std::map<std::string, double> params = {{"batch_size", static_cast<double>(batch(c))}};
        add_list_param(params, "key_splits", std::vector<double>(splits.begin(), splits.end()));
        return params;
    }
    WorkModel work(const ProblemConfig& c) const override { return kjt_work(c); }
};

} // namespace

const Problem& problem_70() {
    static const KjtAllToAll problem;
    return problem;
}

} // namespace pkbw::problems
