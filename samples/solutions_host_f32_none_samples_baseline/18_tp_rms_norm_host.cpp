// Hand-written sample candidate (not LLM output)
// PKB 18 (tensor-parallel RMSNorm) on the host backend: every rank publishes the sum of squares of
// each of its rows (its columns of the hidden dimension) in a symmetric buffer; the total over ranks
// gives the row's mean square over W*N columns, and every rank normalises its own columns.
#include "pkbw/solution.h"

#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& hidden = ctx.input(0);
    const pkbw::TensorView& weight = ctx.input(1);
    if (hidden.dtype != pkbw::DType::F32 || weight.dtype != pkbw::DType::F32) {
        return ctx.fail("host rms-norm sample: only f32 is supported");
    }
    const std::int64_t rows = hidden.shape[0], cols = hidden.shape[1];
    const float eps = static_cast<float>(ctx.param("variance_epsilon", 1e-5));
    const float* h = hidden.as<const float>();
    const float* w = weight.as<const float>();
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("rms_norm_host", static_cast<std::size_t>(rows) * sizeof(float));
    float* squares = static_cast<float*>(sym.local);
    for (std::int64_t i = 0; i < rows; ++i) {
        float sum = 0.f;
        for (std::int64_t j = 0; j < cols; ++j) {
            sum += h[i * cols + j] * h[i * cols + j];
        }
        squares[i] = sum;
    }
    ctx.barrier();
    const float total_cols = static_cast<float>(cols * ctx.world_size);
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < rows; ++i) {
        float total = 0.f;
        for (int r = 0; r < ctx.world_size; ++r) {
            total += static_cast<const float*>(sym.peers[r])[i];
        }
        const float inv_rms = 1.f / std::sqrt(total / total_cols + eps);
        for (std::int64_t j = 0; j < cols; ++j) {
            out[i * cols + j] = w[j] * (h[i * cols + j] * inv_rms);
        }
    }
    ctx.barrier();
    return 0;
}
