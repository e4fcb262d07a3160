// Hand-written sample candidate (not LLM output)
// PKB 75 (Gated DeltaNet: q, k [1, L, H, 256], v [1, L, H, 512], gate, beta [1, L, H] per rank; rank r
// runs heads r*H/W.. over all W*L tokens in rank order: q, k L2-normalised (q / 16), decay =
// exp(-exp(a_log) softplus(gate + dt_bias)), state S [256, 512]: S = decay S, u = (v - k^T S) beta,
// S += k u^T, o = q^T S; o returns to the token's owner) on the host backend, fp32. Inputs and
// results are exchanged through symmetric buffers read in place.
#include "pkbw/solution.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

// a_log and dt_bias are bf16 whatever the dtype: the high half of an fp32.
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
    const int world = ctx.world_size, me = ctx.rank;
    const long long seq = ctx.input(0).shape[1], heads = ctx.input(0).shape[2], dk = ctx.input(0).shape[3];
    const long long dv = ctx.input(2).shape[3], lh = heads / world, tokens = world * seq;
    // Published block: q, k, v, gate, beta of this rank, one after the other.
    long long offsets[6] = {0};
    for (int i = 0; i < 5; ++i) {
        offsets[i + 1] = offsets[i] + ctx.input(i).numel();
    }
    const pkbw::SymmetricMemory in = ctx.symmetric("gdn75_inputs", offsets[5] * sizeof(float));
    const pkbw::SymmetricMemory res = ctx.symmetric("gdn75_results", tokens * lh * dv * sizeof(float));
    for (int i = 0; i < 5; ++i) {
        std::memcpy(static_cast<float*>(in.local) + offsets[i], ctx.input(i).data, ctx.input(i).nbytes());
    }
    ctx.barrier();
    auto peer = [&](int p, int i) { return static_cast<const float*>(in.peers[p]) + offsets[i]; };
    const pkbw::TensorView& a_log = ctx.input(5);
    const pkbw::TensorView& dt_bias = ctx.input(6);
    float* results = static_cast<float*>(res.local);
    std::vector<float> state(dk * dv), qn(dk), kn(dk), u(dv);
    for (long long h = 0; h < lh; ++h) {
        const long long g = me * lh + h;
        const float a = std::exp(bf16_value(a_log, h)), bias = bf16_value(dt_bias, h);
        std::fill(state.begin(), state.end(), 0.f);
        for (long long t = 0; t < tokens; ++t) {
            const int p = static_cast<int>(t / seq);
            const long long at = (t % seq) * heads + g;
            const float* q = peer(p, 0) + at * dk;
            const float* k = peer(p, 1) + at * dk;
            const float* v = peer(p, 2) + at * dv;
            float nq = 0.f, nk = 0.f;
            for (long long e = 0; e < dk; ++e) {
                nq += q[e] * q[e];
                nk += k[e] * k[e];
            }
            nq = std::fmax(std::sqrt(nq), 1e-6f);
            nk = std::fmax(std::sqrt(nk), 1e-6f);
            for (long long e = 0; e < dk; ++e) {
                qn[e] = q[e] / nq / std::sqrt(static_cast<float>(dk));
                kn[e] = k[e] / nk;
            }
            const float x = peer(p, 3)[at] + bias;
            const float decay = std::exp(-a * (x > 20.f ? x : std::log1p(std::exp(x))));
            const float beta = peer(p, 4)[at];
            for (long long j = 0; j < dv; ++j) {
                float proj = 0.f;
                for (long long i = 0; i < dk; ++i) {
                    state[i * dv + j] *= decay;
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
                results[(t * lh + h) * dv + j] = o;
            }
        }
    }
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (int p = 0; p < world; ++p) {
        const float* theirs = static_cast<const float*>(res.peers[p]);
        for (long long s = 0; s < seq; ++s) {
            std::memcpy(out + (s * heads + p * lh) * dv, theirs + (me * seq + s) * lh * dv,
                        lh * dv * sizeof(float));
        }
    }
    ctx.barrier(); // peers may still read this rank's buffers
    return 0;
}
