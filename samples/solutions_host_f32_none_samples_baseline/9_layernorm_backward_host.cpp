// Hand-written sample candidate (not LLM output)
// PKB 9 (LayerNorm backward, gamma/beta gradients) on the host backend: every rank reduces its
// [M, N] shard to column sums of dY * X_hat and of dY, publishes the 2N partial sums in a symmetric
// buffer, and sums every rank's partials into (d_gamma [N], d_beta [N]).
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x_hat = ctx.input(0);
    const pkbw::TensorView& dy = ctx.input(1);
    if (x_hat.dtype != pkbw::DType::F32 || dy.dtype != pkbw::DType::F32) {
        return ctx.fail("host layernorm-backward sample: only f32 is supported");
    }
    const std::int64_t rows = x_hat.shape[0], cols = x_hat.shape[1];
    const float* x = x_hat.as<const float>();
    const float* g = dy.as<const float>();
    std::vector<float> partial(static_cast<std::size_t>(2 * cols), 0.f); // [gamma | beta]
    for (std::int64_t i = 0; i < rows; ++i) {
        for (std::int64_t j = 0; j < cols; ++j) {
            partial[j] += g[i * cols + j] * x[i * cols + j];
            partial[cols + j] += g[i * cols + j];
        }
    }
    const std::size_t bytes = partial.size() * sizeof(float);
    const pkbw::SymmetricMemory sym = ctx.symmetric("layernorm_bwd_host", bytes);
    std::memcpy(sym.local, partial.data(), bytes);
    ctx.barrier();
    float* d_gamma = ctx.output(0).as<float>();
    float* d_beta = ctx.output(1).as<float>();
    for (std::int64_t j = 0; j < cols; ++j) {
        float sum_gamma = 0.f, sum_beta = 0.f;
        for (int r = 0; r < ctx.world_size; ++r) {
            const float* peer = static_cast<const float*>(sym.peers[r]);
            sum_gamma += peer[j];
            sum_beta += peer[cols + j];
        }
        d_gamma[j] = sum_gamma;
        d_beta[j] = sum_beta;
    }
    ctx.barrier();
    return 0;
}
