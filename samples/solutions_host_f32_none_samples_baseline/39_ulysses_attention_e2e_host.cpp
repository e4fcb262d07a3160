// Hand-written sample candidate (not LLM output)
// PKB 39 (Ulysses attention: qkv = hidden w_qkv^T as 8 heads of 64; this rank takes heads
// rank*8/W.. of every rank's tokens; PKB's attention runs over the HEAD axis, softmax(q k^T / 8)
// between one token's local heads; the results go back to the token's owner, concatenated along the
// heads and multiplied by w_o^T) on the host backend, fp32. qkv and the per-token attention results
// are exchanged through symmetric buffers read in place.
#include "pkbw/solution.h"

#include <cmath>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32");
    }
    const int world = ctx.world_size, me = ctx.rank;
    const long long rows = ctx.input(0).shape[0] * ctx.input(0).shape[1], width = ctx.input(0).shape[2];
    const long long heads = static_cast<long long>(ctx.param("num_heads", 8)), hd = width / heads;
    const long long lh = heads / world, piece = lh * hd;
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    const float* hidden = ctx.input(0).as<float>();
    const float* w_qkv = ctx.input(1).as<float>();
    const float* w_o = ctx.input(2).as<float>();

    const pkbw::SymmetricMemory qkv_mem = ctx.symmetric("ulysses39_qkv", rows * 3 * width * sizeof(float));
    const pkbw::SymmetricMemory attn_mem =
        ctx.symmetric("ulysses39_attn", world * rows * piece * sizeof(float));
    float* qkv = static_cast<float*>(qkv_mem.local);
    for (long long r = 0; r < rows; ++r) {
        for (long long o = 0; o < 3 * width; ++o) {
            float acc = 0.f;
            for (long long i = 0; i < width; ++i) {
                acc += hidden[r * width + i] * w_qkv[o * width + i];
            }
            qkv[r * 3 * width + o] = acc;
        }
    }
    ctx.barrier();

    // Every token of every rank, this rank's heads: softmax over the local heads.
    float* attn = static_cast<float*>(attn_mem.local);
    std::vector<float> p(lh);
    for (int src = 0; src < world; ++src) {
        const float* tokens = static_cast<const float*>(qkv_mem.peers[src]);
        for (long long r = 0; r < rows; ++r) {
            const float* t = tokens + r * 3 * width + me * piece;
            for (long long i = 0; i < lh; ++i) {
                float m = -INFINITY;
                for (long long j = 0; j < lh; ++j) {
                    float s = 0.f;
                    for (long long d = 0; d < hd; ++d) {
                        s += t[i * hd + d] * t[width + j * hd + d];
                    }
                    p[j] = s * scale;
                    m = std::fmax(m, p[j]);
                }
                float sum = 0.f;
                for (float& x : p) {
                    x = std::exp(x - m);
                    sum += x;
                }
                for (long long d = 0; d < hd; ++d) {
                    float acc = 0.f;
                    for (long long j = 0; j < lh; ++j) {
                        acc += p[j] * t[2 * width + j * hd + d];
                    }
                    attn[(src * rows + r) * piece + i * hd + d] = acc / sum;
                }
            }
        }
    }
    ctx.barrier();

    std::vector<float> context(rows * width);
    for (int src = 0; src < world; ++src) {
        const float* theirs = static_cast<const float*>(attn_mem.peers[src]) + me * rows * piece;
        for (long long r = 0; r < rows; ++r) {
            for (long long x = 0; x < piece; ++x) {
                context[r * width + src * piece + x] = theirs[r * piece + x];
            }
        }
    }
    float* y = ctx.output(0).as<float>();
    for (long long r = 0; r < rows; ++r) {
        for (long long o = 0; o < width; ++o) {
            float acc = 0.f;
            for (long long i = 0; i < width; ++i) {
                acc += context[r * width + i] * w_o[o * width + i];
            }
            y[r * width + o] = acc;
        }
    }
    ctx.barrier(); // peers may still read this rank's buffers
    return 0;
}
