// Hand-written sample candidate (not LLM output)
// PKB 74 (Kimi delta attention: tp = param tp_size; TP pairs of consecutive ranks, CP groups of ranks
// tp apart; every rank runs all 16 heads over the CP group's whole sequence (rank order): q, k
// L2-normalised (q / sqrt(128)), per-key-dim decay d = exp(-5 sigmoid(exp(a_log) (g + dt_bias))),
// S = diag(d) S, u = (v - k^T S) sigmoid(beta), S += k u^T, o = q^T S; o summed over the TP pair and
// the rank's own slice of the sequence returned) on the host backend, fp32. Inputs and full outputs
// go through symmetric buffers read in place.
#include "pkbw/solution.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

float bf16_value(const pkbw::TensorView& t, long long i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(t.data)[i]) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32");
    }
    const int tp = static_cast<int>(ctx.param("tp_size", 1));
    const int cp = ctx.world_size / tp, cp_rank = ctx.rank / tp, tp_rank = ctx.rank % tp;
    const long long seq = ctx.input(0).shape[1], heads = ctx.input(0).shape[2], dk = ctx.input(0).shape[3];
    const long long dv = ctx.input(2).shape[3], tokens = cp * seq;
    long long offsets[6] = {0};
    for (int i = 0; i < 5; ++i) {
        offsets[i + 1] = offsets[i] + ctx.input(i).numel();
    }
    const pkbw::SymmetricMemory in = ctx.symmetric("kda74_inputs", offsets[5] * sizeof(float));
    const pkbw::SymmetricMemory res = ctx.symmetric("kda74_out", tokens * heads * dv * sizeof(float));
    for (int i = 0; i < 5; ++i) {
        std::memcpy(static_cast<float*>(in.local) + offsets[i], ctx.input(i).data, ctx.input(i).nbytes());
    }
    ctx.barrier();
    auto peer = [&](int c, int i) {
        return static_cast<const float*>(in.peers[c * tp + tp_rank]) + offsets[i];
    };
    float* out = static_cast<float*>(res.local);
    std::vector<float> state(dk * dv), qn(dk), kn(dk), d(dk), u(dv);
    for (long long h = 0; h < heads; ++h) {
        const float a = std::exp(bf16_value(ctx.input(5), h));
        std::fill(state.begin(), state.end(), 0.f);
        for (long long t = 0; t < tokens; ++t) {
            const int c = static_cast<int>(t / seq);
            const long long at = (t % seq) * heads + h;
            const float* q = peer(c, 0) + at * dk;
            const float* k = peer(c, 1) + at * dk;
            const float* v = peer(c, 2) + at * dv;
            const float* g = peer(c, 3) + at * dk;
            float nq = 0.f, nk = 0.f;
            for (long long e = 0; e < dk; ++e) {
                nq += q[e] * q[e];
                nk += k[e] * k[e];
            }
            nq = std::fmax(std::sqrt(nq), 1e-12f);
            nk = std::fmax(std::sqrt(nk), 1e-12f);
            for (long long e = 0; e < dk; ++e) {
                qn[e] = q[e] / nq / std::sqrt(static_cast<float>(dk));
                kn[e] = k[e] / nk;
                const float x = a * (g[e] + bf16_value(ctx.input(6), h * dk + e));
                d[e] = std::exp(-5.f / (1.f + std::exp(-x)));
            }
            const float beta = 1.f / (1.f + std::exp(-peer(c, 4)[at]));
            for (long long j = 0; j < dv; ++j) {
                float proj = 0.f;
                for (long long i = 0; i < dk; ++i) {
                    state[i * dv + j] *= d[i];
                    proj += kn[i] * state[i * dv + j];
                }
                u[j] = (v[j] - proj) * beta;
            }
            for (long long j = 0; j < dv; ++j) {
                float o = 0.f;
                for (long long i = 0; i < dk; ++i) {
                    state[i * dv + j] += kn[i] * u[j];
                    o += qn[i] * state[i * dv + j];
                }
                out[(t * heads + h) * dv + j] = o;
            }
        }
    }
    ctx.barrier();
    const long long slice = seq * heads * dv;
    float* y = ctx.output(0).as<float>();
    for (long long e = 0; e < slice; ++e) {
        float s = 0.f;
        for (int t = 0; t < tp; ++t) {
            s += static_cast<const float*>(res.peers[cp_rank * tp + t])[cp_rank * slice + e];
        }
        y[e] = s;
    }
    ctx.barrier(); // peers may still read this rank's buffers
    return 0;
}
