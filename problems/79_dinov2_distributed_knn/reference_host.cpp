// Host oracle for PKB problem 79: PKB's steps in double: every owner's queries (all_gather_f64), the
// similarities with this rank's train shard rounded once to the dtype (torch's GEMM output), the top-k of
// each row with its labels (labelled_topk_host.h: ties by the lower column), the candidates to their owners
// (tk::all_to_all_v_host, k values and labels per query and peer), and the owner's top-k of the W·k
// candidates concatenated in rank order.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/labelled_topk_host.h"

#include <cstring>
#include <vector>

namespace {

namespace tk = pkbw::tk;

// values (doubles) and labels of [W][Q][k] candidates, owner-major, to their owners; what arrives is
// [W][Q][k] again, block p from peer p.
tk::LabelledTopk send_to_owners(const pkbw::Context& ctx, const tk::LabelledTopk& mine, long long per_peer) {
    const std::vector<long long> counts(static_cast<std::size_t>(ctx.world_size), per_peer);
    const std::vector<std::byte> values =
        tk::all_to_all_v_host(ctx, mine.values.data(), counts, sizeof(double));
    const std::vector<std::byte> labels =
        tk::all_to_all_v_host(ctx, mine.labels.data(), counts, sizeof(long long));
    tk::LabelledTopk out;
    out.values.resize(values.size() / sizeof(double));
    out.labels.resize(labels.size() / sizeof(long long));
    std::memcpy(out.values.data(), values.data(), values.size());
    std::memcpy(out.labels.data(), labels.data(), labels.size());
    return out;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& test = ctx.input(0);
    const pkbw::TensorView& train_t = ctx.input(1);
    const int world = ctx.world_size;
    const long long queries = test.shape[0], features = test.shape[1], train = train_t.shape[1];
    const long long k = ctx.output(0).shape[1];
    if (train_t.shape[0] != features || k > train) {
        return ctx.fail("79 oracle: train_features_rank_T must be [F, T] with T >= max_k");
    }
    const std::vector<double> all_queries = tk::all_gather_f64(ctx, tk::to_f64(test));
    const std::vector<double> sims =
        tk::gemm_rounded(all_queries, tk::to_f64(train_t), queries * world, train, features, test.dtype);
    const auto* shard_labels = ctx.input(2).as<const long long>();
    const tk::LabelledTopk local = tk::labelled_topk_f64(
        sims, std::vector<long long>(shard_labels, shard_labels + train), queries * world, train, k);
    const tk::LabelledTopk received = send_to_owners(ctx, local, queries * k);
    // PKB's torch.cat(dim=1): row q holds peer 0's k candidates, then peer 1's, ...
    const long long width = k * world;
    std::vector<double> values(static_cast<std::size_t>(queries * width));
    std::vector<long long> labels(values.size());
    for (int p = 0; p < world; ++p) {
        for (long long q = 0; q < queries; ++q) {
            for (long long j = 0; j < k; ++j) {
                const std::size_t from = static_cast<std::size_t>((p * queries + q) * k + j);
                const std::size_t to = static_cast<std::size_t>(q * width + p * k + j);
                values[to] = received.values[from];
                labels[to] = received.labels[from];
            }
        }
    }
    const tk::LabelledTopk merged = tk::labelled_topk_f64(values, labels, queries, width, k);
    tk::store_all(ctx.output(0), merged.values);
    std::memcpy(ctx.output(1).data, merged.labels.data(), sizeof(long long) * merged.labels.size());
    return 0;
}
