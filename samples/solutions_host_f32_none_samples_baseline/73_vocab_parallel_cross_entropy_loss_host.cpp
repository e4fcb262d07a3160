// Hand-written sample candidate (not LLM output)
// PKB 73 (vocab-parallel cross-entropy) on the host backend: row maxima, then the target logit and
// the sum of exp, exchanged through symmetric buffers with a barrier after each publication.
#include "pkbw/solution.h"

#include <algorithm>
#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    if (in.dtype != pkbw::DType::F32) {
        return ctx.fail("host cross-entropy sample: only f32 is supported");
    }
    const std::int64_t local = in.shape[in.ndim - 1];
    const std::int64_t rows = in.numel() / local;
    const std::int64_t start = ctx.rank * local;
    float* logits = in.as<float>();
    const std::int64_t* target = ctx.input(1).as<const std::int64_t>();
    const pkbw::SymmetricMemory maxima = ctx.symmetric("ce_host_max", rows * sizeof(float));
    const pkbw::SymmetricMemory parts = ctx.symmetric("ce_host_parts", 2 * rows * sizeof(float));
    float* my_max = static_cast<float*>(maxima.local);
    for (std::int64_t i = 0; i < rows; ++i) {
        my_max[i] = *std::max_element(logits + i * local, logits + (i + 1) * local);
    }
    ctx.barrier();
    float* my_parts = static_cast<float*>(parts.local);
    for (std::int64_t i = 0; i < rows; ++i) {
        float m = my_max[i];
        for (int r = 0; r < ctx.world_size; ++r) {
            m = std::max(m, static_cast<const float*>(maxima.peers[r])[i]);
        }
        float sum = 0.f;
        for (std::int64_t j = 0; j < local; ++j) {
            logits[i * local + j] -= m; // in place, as the reference does
            sum += std::exp(logits[i * local + j]);
        }
        const std::int64_t t = target[i] - start;
        my_parts[i] = (t >= 0 && t < local) ? logits[i * local + t] : 0.f;
        my_parts[rows + i] = sum;
    }
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < rows; ++i) {
        float predicted = 0.f, sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r) {
            predicted += static_cast<const float*>(parts.peers[r])[i];
            sum += static_cast<const float*>(parts.peers[r])[rows + i];
        }
        out[i] = std::log(sum) - predicted;
    }
    ctx.barrier();
    return 0;
}
