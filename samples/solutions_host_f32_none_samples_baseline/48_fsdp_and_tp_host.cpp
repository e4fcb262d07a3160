// Hand-written sample candidate (not LLM output)
// PKB 48 (SwiGLU FFN on an n_tp x n_fsdp grid: W1/W2/W3 blocks gathered over the FSDP group, ranks
// n_tp apart; y = (silu(x W1) * (x W2)) W3 summed over the TP group, n_tp consecutive ranks) on the
// host backend, fp32. Every rank publishes its three weight blocks in one symmetric buffer and reads
// its FSDP peers' blocks in place; the partial y goes to a second symmetric buffer for the TP sum.
#include "pkbw/solution.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32");
    }
    const int n_tp = static_cast<int>(ctx.param("n_tp", 1));
    const int rank = ctx.rank, tp_rank = rank % n_tp, fsdp_rank = rank / n_tp;
    const int n_fsdp = ctx.world_size / n_tp;
    const float* x = ctx.input(0).as<float>();
    const long long b = ctx.input(0).shape[0], d = ctx.input(0).shape[1];
    const long long dr = ctx.input(1).shape[0], dc = ctx.input(1).shape[1];
    const long long block = dr * dc; // every weight block has dr * dc elements

    const pkbw::SymmetricMemory blocks = ctx.symmetric("ffn48_blocks", 3 * block * sizeof(float));
    const pkbw::SymmetricMemory partial = ctx.symmetric("ffn48_partial", b * d * sizeof(float));
    for (int k = 0; k < 3; ++k) {
        std::memcpy(static_cast<float*>(blocks.local) + k * block, ctx.input(1 + k).data,
                    block * sizeof(float));
    }
    ctx.barrier();

    // W1/W2 column slice [d, dc]: row j lives in FSDP peer j / dr. W3 row slice [dc, d]: column j
    // lives in FSDP peer j / dr.
    auto peer_block = [&](int fsdp_peer, int k) {
        return static_cast<const float*>(blocks.peers[fsdp_peer * n_tp + tp_rank]) + k * block;
    };
    std::vector<float> w1(d * dc), w2(d * dc), w3(dc * d);
    for (int p = 0; p < n_fsdp; ++p) {
        std::memcpy(&w1[p * block], peer_block(p, 0), block * sizeof(float));
        std::memcpy(&w2[p * block], peer_block(p, 1), block * sizeof(float));
        const float* w3p = peer_block(p, 2);
        for (long long r = 0; r < dc; ++r) {
            std::memcpy(&w3[r * d + p * dr], w3p + r * dr, dr * sizeof(float));
        }
    }

    std::vector<float> z(b * dc);
    for (long long i = 0; i < b; ++i) {
        std::vector<float> a1(dc, 0.f), a2(dc, 0.f);
        for (long long k = 0; k < d; ++k) {
            const float xv = x[i * d + k];
            for (long long j = 0; j < dc; ++j) {
                a1[j] += xv * w1[k * dc + j];
                a2[j] += xv * w2[k * dc + j];
            }
        }
        for (long long j = 0; j < dc; ++j) {
            z[i * dc + j] = a1[j] / (1.f + std::exp(-a1[j])) * a2[j];
        }
    }
    float* yp = static_cast<float*>(partial.local);
    std::fill(yp, yp + b * d, 0.f);
    for (long long i = 0; i < b; ++i) {
        for (long long k = 0; k < dc; ++k) {
            const float zv = z[i * dc + k];
            for (long long j = 0; j < d; ++j) {
                yp[i * d + j] += zv * w3[k * d + j];
            }
        }
    }
    ctx.barrier();
    float* y = ctx.output(0).as<float>();
    for (long long i = 0; i < b * d; ++i) {
        float s = 0.f;
        for (int t = 0; t < n_tp; ++t) {
            s += static_cast<const float*>(partial.peers[fsdp_rank * n_tp + t])[i];
        }
        y[i] = s;
    }
    ctx.barrier(); // peers may still read this rank's buffers
    return 0;
}
