// Hand-written sample candidate (not LLM output)
// PKB 25 (importance-sampling policy-gradient loss: logits = h W^T over a 32000-word vocabulary,
// per-token cross entropy, ratio = exp(clamp(new - old logprob, +-20)), sums over every rank's valid
// tokens) on the host backend, fp32. Each rank computes its per-token values and seven local
// reductions; one symmetric slot of doubles per rank and a barrier make them global.
#include "pkbw/solution.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32");
    }
    const float* h = ctx.input(0).as<float>();
    const float* w = ctx.input(1).as<float>();
    const std::int64_t* labels = ctx.input(2).as<std::int64_t>();
    const float* old_lp = ctx.input(3).as<float>();
    const float* adv = ctx.input(4).as<float>();
    const long long m = ctx.input(0).shape[0], n = ctx.input(0).shape[1], vocab = ctx.input(1).shape[0];
    const long long ignore = static_cast<long long>(ctx.param("ignore_index", -100));
    float* logprobs = ctx.output(1).as<float>();
    float* pg_out = ctx.output(2).as<float>();

    // local: valid count, pg sum, ratio sum, min, max, k3 sum, entropy sum
    double local[7] = {
        0, 0, 0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), 0, 0};
    double surrogate_sum = 0;
    std::vector<float> logits(vocab);
    for (long long i = 0; i < m; ++i) {
        const bool valid = labels[i] != ignore;
        float ce = 0.f;
        if (valid) {
            float mx = -INFINITY;
            for (long long v = 0; v < vocab; ++v) {
                float acc = 0.f;
                for (long long k = 0; k < n; ++k) {
                    acc += h[i * n + k] * w[v * n + k];
                }
                logits[v] = acc;
                mx = std::max(mx, acc);
            }
            double s = 0;
            for (long long v = 0; v < vocab; ++v) {
                s += std::exp(static_cast<double>(logits[v]) - mx);
            }
            ce = static_cast<float>(mx + std::log(s) - logits[labels[i]]);
        }
        logprobs[i] = -ce;
        const float delta = valid ? std::clamp(-ce - old_lp[i], -20.f, 20.f) : 0.f;
        const float ratio = std::exp(delta);
        pg_out[i] = valid ? -(ratio * adv[i]) : 0.f;
        if (!valid) {
            continue;
        }
        local[0] += 1;
        local[1] += pg_out[i];
        local[2] += ratio;
        local[3] = std::min<double>(local[3], ratio);
        local[4] = std::max<double>(local[4], ratio);
        local[5] += ratio - delta - 1.0f;
        local[6] += ce;
        surrogate_sum += static_cast<double>(ratio) * adv[i] * ce;
    }

    const pkbw::SymmetricMemory slots = ctx.symmetric("is25_slots", sizeof(local));
    std::copy(local, local + 7, static_cast<double*>(slots.local));
    ctx.barrier();
    double g[7] = {0, 0, 0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                   0, 0};
    for (int r = 0; r < ctx.world_size; ++r) {
        const double* p = static_cast<const double*>(slots.peers[r]);
        for (int s : {0, 1, 2, 5, 6}) {
            g[s] += p[s];
        }
        g[3] = std::min(g[3], p[3]);
        g[4] = std::max(g[4], p[4]);
    }
    ctx.barrier(); // peers may still read this rank's slot
    const double count = std::max(1.0, g[0]);
    const float true_pg = static_cast<float>(g[1] / count);
    const float surrogate = static_cast<float>(surrogate_sum / count);
    *ctx.output(0).as<float>() = (true_pg + surrogate) - surrogate;
    float* metrics = ctx.output(3).as<float>();
    metrics[0] = static_cast<float>(g[2] / count);
    metrics[1] = static_cast<float>(g[3]);
    metrics[2] = static_cast<float>(g[4]);
    metrics[3] = static_cast<float>(g[5] / count);
    metrics[4] = static_cast<float>(g[6] / count);
    return 0;
}
