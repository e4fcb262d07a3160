// Hand-written sample candidate (not LLM output)
// PKB 32 (fused MoE forward with rank-8 LoRA: router softmax + top-k, tokens to their experts' ranks,
// one SiLU-GLU MLP with LoRA per rank, weighted combine) on the host backend, fp32. No all-to-all:
// every rank publishes its tokens and its routing (expert and weight per choice) in symmetric
// buffers; after a barrier each rank walks every peer's choices, runs its own MLP on the tokens
// routed to its experts and writes the result into the peer's result slot (token, choice); after a
// second barrier each rank adds its slots times their weights, and a third barrier keeps the next
// call from overwriting buffers a peer still reads.
#include "pkbw/solution.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace {

// y[o] = bias[o] + sum_i w[o, i] x[i] for a row-major weight [out, in] (bias may be null). The sums are
// accumulated in double and stored as float: with the LoRA factors (standard normal) the down
// projection's intermediate x A^T reaches ~1e4-1e5, where a float accumulation's error alone (~0.1)
// exceeds PKB's atol on outputs near zero.
void linear(const float* x, const float* w, const float* bias, long long in, long long out, float* y) {
    for (long long o = 0; o < out; ++o) {
        double acc = bias ? bias[o] : 0.0;
        for (long long i = 0; i < in; ++i) {
            acc += static_cast<double>(w[o * in + i]) * x[i];
        }
        y[o] = static_cast<float>(acc);
    }
}

// y = x W^T + b + (x A^T) B^T: a projection with its rank-r LoRA term.
void lora_linear(const float* x, const float* w, const float* b, const float* a, const float* bb,
                 long long in, long long out, long long r, float* y) {
    std::vector<float> xa(r), extra(out);
    linear(x, w, b, in, out, y);
    linear(x, a, nullptr, in, r, xa.data());
    linear(xa.data(), bb, nullptr, r, out, extra.data());
    for (long long o = 0; o < out; ++o) {
        y[o] += extra[o];
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.num_inputs != 15 || ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32 and the 15 inputs of problem 32");
    }
    const long long m = ctx.input(0).shape[0], n = ctx.input(0).shape[1];
    const long long inter = ctx.input(3).shape[0], r = ctx.input(9).shape[0];
    const int experts = static_cast<int>(ctx.param("num_experts", 8));
    const int k = static_cast<int>(ctx.param("top_k", 2));
    const int world = ctx.world_size;
    if (k < 1 || k > experts || experts % world != 0) {
        return ctx.fail("unsupported num_experts / top_k for this world size");
    }
    const int per_rank = experts / world;
    auto in = [&](int i) { return ctx.input(i).as<float>(); };
    const float* x = in(0);

    const pkbw::SymmetricMemory tokens = ctx.symmetric("moe32_tokens", m * n * sizeof(float));
    const pkbw::SymmetricMemory chosen = ctx.symmetric("moe32_chosen", m * k * sizeof(int));
    const pkbw::SymmetricMemory results = ctx.symmetric("moe32_results", m * k * n * sizeof(float));
    std::memcpy(tokens.local, x, m * n * sizeof(float));
    int* my_choice = static_cast<int*>(chosen.local);
    std::vector<float> weight(m * k), probs(experts);
    for (long long t = 0; t < m; ++t) {
        linear(x + t * n, in(1), in(2), n, experts, probs.data());
        const float top = *std::max_element(probs.begin(), probs.end());
        float sum = 0.f;
        for (float& p : probs) {
            p = std::exp(p - top);
            sum += p;
        }
        for (float& p : probs) {
            p /= sum;
        }
        for (int s = 0; s < k; ++s) { // largest first; a strict '>' keeps the lower expert at a tie
            int best = -1;
            for (int e = 0; e < experts; ++e) {
                if (probs[e] >= 0.f && (best < 0 || probs[e] > probs[best])) {
                    best = e;
                }
            }
            my_choice[t * k + s] = best;
            weight[t * k + s] = probs[best];
            probs[best] = -1.f; // taken
        }
    }
    ctx.barrier();

    std::vector<float> gate(inter), up(inter), out_row(n);
    for (int peer = 0; peer < world; ++peer) {
        const float* px = static_cast<const float*>(tokens.peers[peer]);
        const int* pc = static_cast<const int*>(chosen.peers[peer]);
        float* pr = static_cast<float*>(results.peers[peer]);
        for (long long t = 0; t < m; ++t) {
            for (int s = 0; s < k; ++s) {
                if (pc[t * k + s] / per_rank != ctx.rank) {
                    continue;
                }
                const float* row = px + t * n;
                lora_linear(row, in(3), in(4), in(9), in(10), n, inter, r, gate.data());
                lora_linear(row, in(5), in(6), in(11), in(12), n, inter, r, up.data());
                for (long long i = 0; i < inter; ++i) {
                    gate[i] = gate[i] / (1.f + std::exp(-gate[i])) * up[i];
                }
                lora_linear(gate.data(), in(7), in(8), in(13), in(14), inter, n, r, pr + (t * k + s) * n);
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
    ctx.barrier();
    return 0;
}
