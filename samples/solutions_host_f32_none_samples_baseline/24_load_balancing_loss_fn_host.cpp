// Hand-written sample candidate (not LLM output)
// PKB 24 (MoE load-balancing loss: softmax over the experts, top-2 per token, token fractions times
// mean router probabilities, times E, averaged over ranks) on the host backend: float softmax per
// token (rounded to bf16 when the logits are bf16), top-2 with the lower index first at a tie, the
// local loss published in a symmetric slot; after a barrier every rank adds the slots in rank order.
#include "pkbw/solution.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

float bf16_to_float(std::uint16_t v) {
    const std::uint32_t bits = static_cast<std::uint32_t>(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

float round_bf16(float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest even (no NaN here)
    return bf16_to_float(static_cast<std::uint16_t>(bits >> 16));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& logits = ctx.input(0);
    const bool bf16 = logits.dtype == pkbw::DType::BF16;
    if (!bf16 && logits.dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles f32 and bf16 logits");
    }
    const int experts = static_cast<int>(ctx.param("num_experts", 8));
    const long long tokens = logits.shape[0];
    if (logits.ndim != 2 || logits.shape[1] != experts || experts < 3) {
        return ctx.fail("this sample expects gate_logits [M, num_experts], num_experts >= 3, top_k = 2");
    }
    std::vector<float> first(experts, 0.f), second(experts, 0.f), prob_sum(experts, 0.f), p(experts);
    for (long long t = 0; t < tokens; ++t) {
        float row_max = -INFINITY;
        for (int e = 0; e < experts; ++e) {
            const long long i = t * experts + e;
            p[e] = bf16 ? bf16_to_float(static_cast<const std::uint16_t*>(logits.data)[i])
                        : static_cast<const float*>(logits.data)[i];
            row_max = std::fmax(row_max, p[e]);
        }
        float sum = 0.f;
        for (int e = 0; e < experts; ++e) {
            p[e] = std::exp(p[e] - row_max);
            sum += p[e];
        }
        int a = -1, b = -1; // best and second best; strict > keeps the lower index at a tie
        for (int e = 0; e < experts; ++e) {
            p[e] /= sum;
            if (bf16) {
                p[e] = round_bf16(p[e]);
            }
            prob_sum[e] += p[e];
            if (a < 0 || p[e] > p[a]) {
                b = a;
                a = e;
            } else if (b < 0 || p[e] > p[b]) {
                b = e;
            }
        }
        first[a] += 1.f;
        second[b] += 1.f;
    }
    float local = 0.f;
    for (int e = 0; e < experts; ++e) {
        float mean = prob_sum[e] / static_cast<float>(tokens);
        if (bf16) {
            mean = round_bf16(mean);
        }
        local += (first[e] + second[e]) / static_cast<float>(tokens) * mean;
    }
    local *= static_cast<float>(experts);
    const pkbw::SymmetricMemory slots = ctx.symmetric("lbl24_host", sizeof(float));
    *static_cast<float*>(slots.local) = local;
    ctx.barrier();
    float total = 0.f;
    for (int r = 0; r < ctx.world_size; ++r) {
        total += *static_cast<const float*>(slots.peers[r]);
    }
    ctx.barrier(); // every rank has read every slot: the next call may overwrite ours
    *static_cast<float*>(ctx.output(0).data) = total / static_cast<float>(ctx.world_size);
    return 0;
}
