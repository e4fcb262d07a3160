// Hand-written sample candidate (not LLM output)
// PKB 69 (every rank's positive scores [P_r] and negatives [P_r, n] gathered in rank order; for each row
// the 1-based position of the positive in sigmoid(cat(pos, neg)) sorted descending, the positive first
// among equal values) on the host backend: the row counts through all_gather_host, each rank's scores in a
// symmetric buffer sized for the largest rank, barrier, every rank ranks every row straight from its
// owner's buffer (a count of the negatives above the positive, no sort), barrier. f32 only.
#include "pkbw/solution.h"

#include <cmath>
#include <vector>

namespace {

float sigmoid(float x) {
    return 1.0f / (1.0f + std::exp(-x));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& pos = ctx.input(0);
    const pkbw::TensorView& neg = ctx.input(1);
    if (pos.dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles f32 only");
    }
    const int world = ctx.world_size;
    const long long mine = pos.shape[0], n = neg.shape[1];
    std::vector<long long> counts(world);
    ctx.all_gather_host(&mine, sizeof mine, counts.data());
    long long largest = 0;
    for (long long c : counts) {
        largest = c > largest ? c : largest;
    }
    // Per rank: its positives, then its negatives, in a buffer of the same size on every rank.
    const pkbw::SymmetricMemory sym = ctx.symmetric("gnn69_host", sizeof(float) * largest * (1 + n));
    float* local = static_cast<float*>(sym.local);
    for (long long i = 0; i < mine; ++i) {
        local[i] = pos.as<const float>()[i];
    }
    for (long long i = 0; i < mine * n; ++i) {
        local[largest + i] = neg.as<const float>()[i];
    }
    ctx.barrier();
    long long* out = ctx.output(0).as<long long>();
    long long row = 0;
    for (int p = 0; p < world; ++p) {
        const float* peer = static_cast<const float*>(sym.peers[p]);
        for (long long i = 0; i < counts[p]; ++i, ++row) {
            const float positive = sigmoid(peer[i]);
            long long above = 0;
            for (long long j = 0; j < n; ++j) {
                above += sigmoid(peer[largest + i * n + j]) > positive ? 1 : 0;
            }
            out[row] = 1 + above;
        }
    }
    ctx.barrier();
    return 0;
}
