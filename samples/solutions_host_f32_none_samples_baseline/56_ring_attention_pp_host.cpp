// Hand-written sample candidate (not LLM output)
// PKB 56 (two pipeline stages of an attention block: pp = param pp_size stages of cp = W/pp
// consecutive ranks; stage 0 applies its block - qkv = x w_qkv^T on 8 heads of 64, causal attention
// over its stage's sequence blocks, y = context w_o^T - to hidden and hands y to the rank cp places
// later, which applies its own block to it) on the host backend, fp32. Stage by stage, every rank
// publishes k and v in a symmetric buffer and its output in another; all ranks meet at every barrier.
#include "pkbw/solution.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace {

struct Dims {
    long long b_n, s_n, hid, rows, d_n = 64, h_n;
};

// out[r][o] = Σ_i x[r][i] w[o][i]
void linear(const float* x, const float* w, float* out, long long rows, long long in, long long outs) {
    for (long long r = 0; r < rows; ++r) {
        for (long long o = 0; o < outs; ++o) {
            float acc = 0.f;
            for (long long i = 0; i < in; ++i) {
                acc += x[r * in + i] * w[o * in + i];
            }
            out[r * outs + o] = acc;
        }
    }
}

// Causal attention of this rank's queries over the k|v blocks of stage peers 0..me.
void attend(const Dims& d, const float* qkv, const pkbw::SymmetricMemory& kv, int first_rank, int me,
            bool causal, int peers, float* context) {
    const float scale = 1.f / std::sqrt(static_cast<float>(d.d_n));
    const int last = causal ? me : peers - 1;
    std::vector<float> p((last + 1) * d.s_n);
    for (long long b = 0; b < d.b_n; ++b) {
        for (long long i = 0; i < d.s_n; ++i) {
            for (long long h = 0; h < d.h_n; ++h) {
                const float* q = qkv + (b * d.s_n + i) * 3 * d.hid + h * d.d_n;
                float m = -INFINITY;
                for (int c = 0; c <= last; ++c) {
                    const float* keys = static_cast<const float*>(kv.peers[first_rank + c]);
                    for (long long j = 0; j < d.s_n; ++j) {
                        float s = 0.f;
                        for (long long e = 0; e < d.d_n; ++e) {
                            s += q[e] * keys[(b * d.s_n + j) * d.hid + h * d.d_n + e];
                        }
                        p[c * d.s_n + j] = (causal && c == me && j > i) ? -INFINITY : s * scale;
                        m = std::fmax(m, p[c * d.s_n + j]);
                    }
                }
                float sum = 0.f;
                for (float& x : p) {
                    x = std::exp(x - m);
                    sum += x;
                }
                for (long long e = 0; e < d.d_n; ++e) {
                    float acc = 0.f;
                    for (int c = 0; c <= last; ++c) {
                        const float* values =
                            static_cast<const float*>(kv.peers[first_rank + c]) + d.rows * d.hid;
                        for (long long j = 0; j < d.s_n; ++j) {
                            acc += p[c * d.s_n + j] * values[(b * d.s_n + j) * d.hid + h * d.d_n + e];
                        }
                    }
                    context[(b * d.s_n + i) * d.hid + h * d.d_n + e] = acc / sum;
                }
            }
        }
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32");
    }
    const int pp = static_cast<int>(ctx.param("pp_size", 1));
    const int cp = ctx.world_size / pp, stage = ctx.rank / cp, cp_rank = ctx.rank % cp;
    Dims d{ctx.input(0).shape[0], ctx.input(0).shape[1], ctx.input(0).shape[2], 0, 64, 0};
    d.rows = d.b_n * d.s_n;
    d.h_n = d.hid / d.d_n;
    const bool causal = ctx.param("causal", 1) != 0;
    const pkbw::SymmetricMemory kv = ctx.symmetric("ring56_kv", 2 * d.rows * d.hid * sizeof(float));
    const pkbw::SymmetricMemory handoff = ctx.symmetric("ring56_stage", d.rows * d.hid * sizeof(float));
    std::vector<float> qkv(d.rows * 3 * d.hid), context(d.rows * d.hid);
    float* y = ctx.output(0).as<float>();
    for (int s = 0; s < pp; ++s) {
        if (stage == s) {
            const float* x =
                s == 0 ? ctx.input(0).as<float>() : static_cast<const float*>(handoff.peers[ctx.rank - cp]);
            linear(x, ctx.input(1).as<float>(), qkv.data(), d.rows, d.hid, 3 * d.hid);
            float* mine = static_cast<float*>(kv.local);
            for (long long r = 0; r < d.rows; ++r) {
                std::memcpy(mine + r * d.hid, &qkv[r * 3 * d.hid + d.hid], d.hid * sizeof(float));
                std::memcpy(mine + (d.rows + r) * d.hid, &qkv[r * 3 * d.hid + 2 * d.hid],
                            d.hid * sizeof(float));
            }
        }
        ctx.barrier(); // this stage's k/v are published (and the previous stage's output was read)
        if (stage == s) {
            attend(d, qkv.data(), kv, s * cp, cp_rank, causal, cp, context.data());
            linear(context.data(), ctx.input(2).as<float>(), y, d.rows, d.hid, d.hid);
            std::memcpy(handoff.local, y, d.rows * d.hid * sizeof(float));
        }
        ctx.barrier(); // the stage's outputs are ready, its k/v no longer read
    }
    return 0;
}
