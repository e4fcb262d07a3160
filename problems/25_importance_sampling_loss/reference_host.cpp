// Host oracle for PKB problem 25: logits h W^T in double rounded to D (toolkit gemm_rounded, a block
// of rows at a time so that the [M, 32000] logits never exist at once), the log-sum-exp in double,
// then PKB's per-token chain with a rounding to D wherever PyTorch stores a tensor, local sums rounded
// to D, the cross-rank sums in double of the rounded local sums rounded once to D (the all-reduce of
// a D tensor), and the divisions by the global valid count in fp32.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace tk = pkbw::tk;

namespace {

constexpr std::int64_t kRowBlock = 64;

// Which locally reduced value each slot of the exchanged vector is.
enum Slot { kValid, kPg, kRatio, kMin, kMax, kK3, kEntropy, kSlots };

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& h = ctx.input(0);
    const pkbw::TensorView& weight = ctx.input(1);
    const pkbw::TensorView& labels = ctx.input(2);
    const pkbw::DType dt = h.dtype;
    const std::int64_t m = h.shape[0], n = h.shape[1], vocab = weight.shape[0];
    if (weight.shape[1] != n || labels.numel() != m) {
        return ctx.fail("25 oracle: weight must be [V, N] and labels [M] for hidden_states [M, N]");
    }
    const std::int64_t ignore = static_cast<std::int64_t>(ctx.param("ignore_index", -100));
    const std::int64_t* label = labels.as<std::int64_t>();
    const std::vector<double> hs = tk::to_f64(h);
    // W^T [N, V], once, so that every block of rows is a plain GEMM.
    std::vector<double> wt;
    {
        const std::vector<double> w = tk::to_f64(weight);
        wt.resize(w.size());
        for (std::int64_t v = 0; v < vocab; ++v)
            for (std::int64_t k = 0; k < n; ++k)
                wt[k * vocab + v] = w[v * n + k];
    }
    const std::vector<double> old_lp = tk::to_f64(ctx.input(3));
    const std::vector<double> adv = tk::to_f64(ctx.input(4));
    auto rd = [dt](double v) { return tk::round_to(dt, v); };
    auto rf = [](double v) { return tk::round_to(pkbw::DType::F32, v); };

    // Per-token cross entropy: -log_softmax(logits)[label], log_softmax stored in D; 0 when ignored.
    std::vector<double> ce(static_cast<std::size_t>(m), 0.0);
    for (std::int64_t r0 = 0; r0 < m; r0 += kRowBlock) {
        const std::int64_t rows = std::min(kRowBlock, m - r0);
        const std::vector<double> block(hs.begin() + r0 * n, hs.begin() + (r0 + rows) * n);
        const std::vector<double> logits = tk::gemm_rounded(block, wt, rows, vocab, n, dt);
        const std::vector<double> lse = tk::row_logsumexp_f64(logits, rows, vocab);
        for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t y = label[r0 + r];
            if (y == ignore) {
                continue;
            }
            if (y < 0 || y >= vocab) {
                return ctx.fail("25 oracle: a label is outside [0, V) and is not ignore_index");
            }
            ce[r0 + r] = -rd(logits[r * vocab + y] - lse[r]);
        }
    }

    std::vector<double> local(kSlots, 0.0);
    local[kMin] = std::numeric_limits<double>::infinity();
    local[kMax] = -std::numeric_limits<double>::infinity();
    double surrogate_sum = 0;
    const pkbw::TensorView& logprobs_out = ctx.output(1);
    const pkbw::TensorView& pg_out = ctx.output(2);
    for (std::int64_t i = 0; i < m; ++i) {
        const bool valid = label[i] != ignore;
        const double new_lp = -ce[i];
        tk::store(logprobs_out, i, new_lp);
        const double delta = valid ? std::clamp(rd(new_lp - old_lp[i]), -20.0, 20.0) : 0.0;
        const double ratio = rd(std::exp(delta));
        const double ratio_adv = rd(ratio * adv[i]);
        const double pg = valid ? -ratio_adv : 0.0;
        tk::store(pg_out, i, pg);
        if (!valid) {
            continue;
        }
        local[kValid] += 1;
        local[kPg] += pg;
        surrogate_sum += rd(ratio_adv * ce[i]);
        local[kRatio] += ratio;
        local[kMin] = std::min(local[kMin], ratio);
        local[kMax] = std::max(local[kMax], ratio);
        local[kK3] += rd(rd(ratio - delta) - 1.0);
        local[kEntropy] += ce[i];
    }
    // torch.sum of a D tensor stores its result in D.
    for (const int s : {kPg, kRatio, kK3, kEntropy}) {
        local[s] = rd(local[s]);
    }
    surrogate_sum = rd(surrogate_sum);

    const std::vector<double> all = tk::all_gather_f64(ctx, local);
    std::vector<double> global(kSlots, 0.0);
    global[kMin] = std::numeric_limits<double>::infinity();
    global[kMax] = -std::numeric_limits<double>::infinity();
    for (int r = 0; r < ctx.world_size; ++r) {
        const double* v = &all[static_cast<std::size_t>(r) * kSlots];
        for (const int s : {kValid, kPg, kRatio, kK3, kEntropy}) {
            global[s] += v[s];
        }
        global[kMin] = std::min(global[kMin], v[kMin]);
        global[kMax] = std::max(global[kMax], v[kMax]);
    }
    for (const int s : {kPg, kRatio, kK3, kEntropy}) {
        global[s] = rd(global[s]);
    }
    const double count = std::max(1.0, global[kValid]);
    const double true_pg = rf(global[kPg] / count);
    const double surrogate = rf(surrogate_sum / count);
    tk::store(ctx.output(0), 0, rf(rf(true_pg + surrogate) - surrogate));
    const double metrics[5] = {rf(global[kRatio] / count), global[kMin], global[kMax],
                               rf(global[kK3] / count), rf(global[kEntropy] / count)};
    for (int k = 0; k < 5; ++k) {
        tk::store(ctx.output(3), k, metrics[k]);
    }
    return 0;
}
