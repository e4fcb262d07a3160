// Hand-written sample candidate (not LLM output)
// PKB 57 (ring attention backward on a CP x DP grid, dp = param dp_size: CP groups are W/dp
// consecutive ranks, DP groups ranks W/dp apart; dout, q, k, v, out [B, S, 8, 64] and lse [B, 8, S];
// non-causal: dq over every key block of the CP group, dk/dv over every query block, then the DP
// mean) on the host backend, fp32. Every rank publishes its six inputs in one symmetric buffer and
// reads the CP peers' blocks in place; the gradients go to a second buffer for the DP average.
#include "pkbw/solution.h"

#include <cmath>
#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(1).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32");
    }
    if (ctx.param("causal", 0) != 0) {
        return ctx.fail("this sample handles the non-causal case");
    }
    const int dp = static_cast<int>(ctx.param("dp_size", 1));
    const int cp = ctx.world_size / dp, cp_rank = ctx.rank % cp, base = ctx.rank - cp_rank;
    const long long b_n = ctx.input(1).shape[0], s_n = ctx.input(1).shape[1], h_n = ctx.input(1).shape[2];
    const long long d_n = ctx.input(1).shape[3], n = ctx.input(1).numel(), nl = ctx.input(5).numel();
    const float scale = 1.f / std::sqrt(static_cast<float>(d_n));

    // Layout of a rank's published block: dout, q, k, v, out (n each), lse (nl).
    const pkbw::SymmetricMemory in = ctx.symmetric("ring57_inputs", (5 * n + nl) * sizeof(float));
    const pkbw::SymmetricMemory grads = ctx.symmetric("ring57_grads", 3 * n * sizeof(float));
    for (int t = 0; t < 6; ++t) {
        std::memcpy(static_cast<float*>(in.local) + t * n, ctx.input(t).data, ctx.input(t).nbytes());
    }
    ctx.barrier();
    auto part = [&](int peer, int t) { return static_cast<const float*>(in.peers[base + peer]) + t * n; };

    float* dq = static_cast<float*>(grads.local);
    float* dk = dq + n;
    float* dv = dq + 2 * n;
    std::memset(dq, 0, 3 * n * sizeof(float));
    // Block (query rank i, key rank j) for every pair that involves this rank.
    for (int other = 0; other < cp; ++other) {
        for (int role = 0; role < 2; ++role) {
            if (role == 1 && other == cp_rank) {
                continue; // the diagonal block was done with role 0
            }
            const int qi = role == 0 ? cp_rank : other, kj = role == 0 ? other : cp_rank;
            const float *dout = part(qi, 0), *q = part(qi, 1), *out = part(qi, 4), *lse = part(qi, 5);
            const float *k = part(kj, 2), *v = part(kj, 3);
            for (long long b = 0; b < b_n; ++b) {
                for (long long h = 0; h < h_n; ++h) {
                    for (long long i = 0; i < s_n; ++i) {
                        const long long qa = ((b * s_n + i) * h_n + h) * d_n;
                        float rd = 0.f;
                        for (long long d = 0; d < d_n; ++d) {
                            rd += dout[qa + d] * out[qa + d];
                        }
                        const float l = lse[(b * h_n + h) * s_n + i];
                        for (long long j = 0; j < s_n; ++j) {
                            const long long ka = ((b * s_n + j) * h_n + h) * d_n;
                            float s = 0.f, dpv = 0.f;
                            for (long long d = 0; d < d_n; ++d) {
                                s += q[qa + d] * k[ka + d];
                                dpv += dout[qa + d] * v[ka + d];
                            }
                            const float p = std::exp(s * scale - l), ds = p * (dpv - rd);
                            for (long long d = 0; d < d_n; ++d) {
                                if (qi == cp_rank) {
                                    dq[qa + d] += scale * ds * k[ka + d];
                                }
                                if (kj == cp_rank) {
                                    dk[ka + d] += scale * ds * q[qa + d];
                                    dv[ka + d] += p * dout[qa + d];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    ctx.barrier();
    for (int g = 0; g < 3; ++g) {
        float* y = ctx.output(g).as<float>();
        for (long long e = 0; e < n; ++e) {
            float s = 0.f;
            for (int r = 0; r < dp; ++r) {
                s += static_cast<const float*>(grads.peers[r * cp + cp_rank])[g * n + e];
            }
            y[e] = s / dp;
        }
    }
    ctx.barrier(); // peers may still read this rank's buffers
    return 0;
}
