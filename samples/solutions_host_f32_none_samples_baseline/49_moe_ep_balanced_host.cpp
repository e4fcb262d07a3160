// Hand-written sample candidate (not LLM output)
// PKB 49 (31 with E = W: one expert per rank; fused MoE forward: router softmax + top-k, tokens to their
// experts' ranks, one SiLU-GLU MLP per rank, weighted combine) on the host backend, fp32. Instead of two
// all-to-alls, every rank publishes its tokens and routing in symmetric buffers; each rank pulls the tokens
// routed to its local experts from the peers of its EP group, runs its MLP on them and writes each result
// into the owner's result slot (token, choice); after a barrier every rank sums its slots times their
// weights. Reads params num_experts, top_k and ep_size (EP groups of ep_size consecutive ranks; the world by
// default), so the same code serves 49, 50 and 51.
#include "pkbw/solution.h"

#include <cmath>
#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32");
    }
    const long long m = ctx.input(0).shape[0], n = ctx.input(0).shape[1], inter = ctx.input(3).shape[0];
    const int experts = static_cast<int>(ctx.param("num_experts", 8));
    const int k = static_cast<int>(ctx.param("top_k", 2));
    const int ep = static_cast<int>(ctx.param("ep_size", ctx.world_size));
    if (k < 1 || k > experts || ep < 1 || experts % ep != 0 || ctx.world_size % ep != 0) {
        return ctx.fail("unsupported num_experts / top_k / ep_size");
    }
    const int local = experts / ep, group_base = ctx.rank / ep * ep, me = ctx.rank % ep;
    const float* x = ctx.input(0).as<float>();
    const float* wr = ctx.input(1).as<float>();
    const float* br = ctx.input(2).as<float>();
    const float* wg = ctx.input(3).as<float>();
    const float* bg = ctx.input(4).as<float>();
    const float* wu = ctx.input(5).as<float>();
    const float* bu = ctx.input(6).as<float>();
    const float* wd = ctx.input(7).as<float>();
    const float* bd = ctx.input(8).as<float>();

    const pkbw::SymmetricMemory tokens = ctx.symmetric("moe49_tokens", m * n * sizeof(float));
    const pkbw::SymmetricMemory routes = ctx.symmetric("moe49_routes", m * k * sizeof(int));
    const pkbw::SymmetricMemory results = ctx.symmetric("moe49_results", m * k * n * sizeof(float));
    std::memcpy(tokens.local, x, m * n * sizeof(float));

    // Router: logits, softmax, top-k (strictly larger wins, so ties keep the lower expert).
    std::vector<float> weight(m * k), logits(experts);
    int* choice = static_cast<int*>(routes.local);
    for (long long t = 0; t < m; ++t) {
        float top = -INFINITY;
        for (int e = 0; e < experts; ++e) {
            float acc = br[e];
            for (long long j = 0; j < n; ++j) {
                acc += x[t * n + j] * wr[e * n + j];
            }
            logits[e] = acc;
            top = std::fmax(top, acc);
        }
        float sum = 0.f;
        for (int e = 0; e < experts; ++e) {
            logits[e] = std::exp(logits[e] - top);
            sum += logits[e];
        }
        for (int s = 0; s < k; ++s) {
            int best = -1;
            for (int e = 0; e < experts; ++e) {
                bool taken = false;
                for (int q = 0; q < s; ++q) {
                    taken = taken || choice[t * k + q] == e;
                }
                if (!taken && (best < 0 || logits[e] > logits[best])) {
                    best = e;
                }
            }
            choice[t * k + s] = best;
            weight[t * k + s] = logits[best] / sum;
        }
    }
    ctx.barrier();

    // Serve the tokens of the group routed to this rank's experts.
    std::vector<float> h(inter);
    for (int p = 0; p < ep; ++p) {
        const int peer = group_base + p;
        const float* px = static_cast<const float*>(tokens.peers[peer]);
        const int* pc = static_cast<const int*>(routes.peers[peer]);
        float* pr = static_cast<float*>(results.peers[peer]);
        for (long long t = 0; t < m; ++t) {
            for (int s = 0; s < k; ++s) {
                if (pc[t * k + s] / local != me) {
                    continue;
                }
                const float* row = px + t * n;
                for (long long i = 0; i < inter; ++i) {
                    float g = bg[i], u = bu[i];
                    for (long long j = 0; j < n; ++j) {
                        g += row[j] * wg[i * n + j];
                        u += row[j] * wu[i * n + j];
                    }
                    h[i] = g / (1.f + std::exp(-g)) * u;
                }
                float* dst = pr + (t * k + s) * n;
                for (long long j = 0; j < n; ++j) {
                    float y = bd[j];
                    for (long long i = 0; i < inter; ++i) {
                        y += h[i] * wd[j * inter + i];
                    }
                    dst[j] = y;
                }
            }
        }
    }
    ctx.barrier();

    const float* mine = static_cast<const float*>(results.local);
    float* out = ctx.output(0).as<float>();
    for (long long t = 0; t < m; ++t) {
        for (long long j = 0; j < n; ++j) {
            float acc = 0.f;
            for (int s = 0; s < k; ++s) {
                acc += weight[t * k + s] * mine[(t * k + s) * n + j];
            }
            out[t * n + j] = acc;
        }
    }
    return 0;
}
