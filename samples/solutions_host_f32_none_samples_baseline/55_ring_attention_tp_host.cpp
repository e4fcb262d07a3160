// Hand-written sample candidate (not LLM output)
// PKB 55 (attention block on a TP x CP grid, tp = param tp_size: TP pairs are consecutive ranks, CP
// groups ranks tp apart; qkv = hidden w_qkv^T on 8/tp heads of 64, causal attention over the CP
// group's sequence blocks, y = context w_o^T summed over the TP group) on the host backend, fp32.
// Each rank publishes its k and v in a symmetric buffer and reads the CP peers' blocks in place (one
// softmax over the whole causal range); the partial projections go to a second symmetric buffer for
// the TP sum.
#include "pkbw/solution.h"

#include <cmath>
#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32");
    }
    const int tp = static_cast<int>(ctx.param("tp_size", 1));
    const int tp_rank = ctx.rank % tp, cp_rank = ctx.rank / tp;
    const float* hidden = ctx.input(0).as<float>();
    const float* w_qkv = ctx.input(1).as<float>();
    const float* w_o = ctx.input(2).as<float>();
    const long long b_n = ctx.input(0).shape[0], s_n = ctx.input(0).shape[1], hid = ctx.input(0).shape[2];
    const long long width = ctx.input(2).shape[1], d_n = 64, h_n = width / d_n, rows = b_n * s_n;
    const bool causal = ctx.param("causal", 1) != 0;
    const float scale = 1.f / std::sqrt(static_cast<float>(d_n));

    std::vector<float> qkv(rows * 3 * width, 0.f);
    for (long long r = 0; r < rows; ++r) {
        for (long long o = 0; o < 3 * width; ++o) {
            float acc = 0.f;
            for (long long i = 0; i < hid; ++i) {
                acc += hidden[r * hid + i] * w_qkv[o * hid + i];
            }
            qkv[r * 3 * width + o] = acc;
        }
    }
    const pkbw::SymmetricMemory kv = ctx.symmetric("ring55_kv", 2 * rows * width * sizeof(float));
    const pkbw::SymmetricMemory partial = ctx.symmetric("ring55_partial", rows * hid * sizeof(float));
    float* mine = static_cast<float*>(kv.local);
    for (long long r = 0; r < rows; ++r) {
        std::memcpy(mine + r * width, &qkv[r * 3 * width + width], width * sizeof(float));
        std::memcpy(mine + (rows + r) * width, &qkv[r * 3 * width + 2 * width], width * sizeof(float));
    }
    ctx.barrier();

    const int last = causal ? cp_rank : ctx.world_size / tp - 1;
    std::vector<float> context(rows * width), p((last + 1) * s_n);
    for (long long b = 0; b < b_n; ++b) {
        for (long long i = 0; i < s_n; ++i) {
            for (long long h = 0; h < h_n; ++h) {
                const float* q = &qkv[(b * s_n + i) * 3 * width + h * d_n];
                float m = -INFINITY;
                for (int c = 0; c <= last; ++c) {
                    const float* keys = static_cast<const float*>(kv.peers[c * tp + tp_rank]);
                    for (long long j = 0; j < s_n; ++j) {
                        float s = 0.f;
                        for (long long d = 0; d < d_n; ++d) {
                            s += q[d] * keys[(b * s_n + j) * width + h * d_n + d];
                        }
                        p[c * s_n + j] = (causal && c == cp_rank && j > i) ? -INFINITY : s * scale;
                        m = std::fmax(m, p[c * s_n + j]);
                    }
                }
                float sum = 0.f;
                for (float& x : p) {
                    x = std::exp(x - m);
                    sum += x;
                }
                for (long long d = 0; d < d_n; ++d) {
                    float acc = 0.f;
                    for (int c = 0; c <= last; ++c) {
                        const float* values =
                            static_cast<const float*>(kv.peers[c * tp + tp_rank]) + rows * width;
                        for (long long j = 0; j < s_n; ++j) {
                            acc += p[c * s_n + j] * values[(b * s_n + j) * width + h * d_n + d];
                        }
                    }
                    context[(b * s_n + i) * width + h * d_n + d] = acc / sum;
                }
            }
        }
    }
    float* y_part = static_cast<float*>(partial.local);
    for (long long r = 0; r < rows; ++r) {
        for (long long o = 0; o < hid; ++o) {
            float acc = 0.f;
            for (long long i = 0; i < width; ++i) {
                acc += context[r * width + i] * w_o[o * width + i];
            }
            y_part[r * hid + o] = acc;
        }
    }
    ctx.barrier();
    float* y = ctx.output(0).as<float>();
    for (long long e = 0; e < rows * hid; ++e) {
        float s = 0.f;
        for (int t = 0; t < tp; ++t) {
            s += static_cast<const float*>(partial.peers[cp_rank * tp + t])[e];
        }
        y[e] = s;
    }
    ctx.barrier(); // peers may still read this rank's buffers
    return 0;
}
