// Hand-written sample candidate (not LLM output)
// PKB 79 (rank o returns the top-k similarities of its queries [Q, F] against every rank's train shard
// [F, T], with the train labels, descending, ties by the lower global train index rank*T + j) on the host
// backend: every rank puts its train shard and labels in a symmetric buffer, barrier, then scores its own
// queries against every peer's shard directly (dot products in double, rounded to f32 as the GEMM's output
// is) and keeps the k best with a partial sort; barrier. No merge step is needed: the global top-k with
// ties by global index is what PKB's per-rank top-k and owner merge produce. f32 only.
#include "pkbw/solution.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace {

struct Candidate {
    float value;
    long long index; // global train index: rank * T + j
    long long label;
};

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& test = ctx.input(0);
    const pkbw::TensorView& train_t = ctx.input(1);
    if (test.dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles f32 only");
    }
    const int world = ctx.world_size;
    const long long queries = test.shape[0], features = test.shape[1], train = train_t.shape[1];
    const long long k = static_cast<long long>(ctx.param("max_k", 200));
    // Layout per rank: train_T [F, T] floats, then T labels.
    const std::size_t train_bytes = train_t.nbytes(), label_bytes = sizeof(long long) * train;
    const pkbw::SymmetricMemory sym = ctx.symmetric("knn79_host", train_bytes + label_bytes);
    std::memcpy(sym.local, train_t.data, train_bytes);
    std::memcpy(static_cast<char*>(sym.local) + train_bytes, ctx.input(2).data, label_bytes);
    ctx.barrier();
    const float* q_all = test.as<const float>();
    std::vector<Candidate> all(static_cast<std::size_t>(world * train));
    std::vector<double> acc(static_cast<std::size_t>(train));
    for (long long q = 0; q < queries; ++q) {
        const float* query = q_all + q * features;
        for (int p = 0; p < world; ++p) {
            const auto* shard = static_cast<const float*>(sym.peers[p]);
            const auto* labels =
                reinterpret_cast<const long long*>(static_cast<const char*>(sym.peers[p]) + train_bytes);
            std::fill(acc.begin(), acc.end(), 0.0);
            for (long long f = 0; f < features; ++f) {
                const double x = query[f];
                const float* row = shard + f * train;
                for (long long j = 0; j < train; ++j) {
                    acc[j] += x * row[j];
                }
            }
            for (long long j = 0; j < train; ++j) {
                all[p * train + j] = {static_cast<float>(acc[j]), p * train + j, labels[j]};
            }
        }
        std::partial_sort(all.begin(), all.begin() + k, all.end(),
                          [](const Candidate& a, const Candidate& b) {
                              return a.value > b.value || (a.value == b.value && a.index < b.index);
                          });
        for (long long i = 0; i < k; ++i) {
            ctx.output(0).as<float>()[q * k + i] = all[i].value;
            ctx.output(1).as<long long>()[q * k + i] = all[i].label;
        }
    }
    ctx.barrier();
    return 0;
}
