// Hand-written sample candidate (not LLM output)
// PKB 43 (sharded Adam step + all-gather) on the host backend, f32: the updated shard goes into a
// symmetric buffer; after a barrier every rank copies all shards in rank order.
#include "pkbw/solution.h"

#include <cmath>
#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("host adam sample: only f32 is supported");
    }
    const std::int64_t p = ctx.input(0).numel();
    const float lr = static_cast<float>(ctx.param("lr", 1e-3));
    const float beta1 = static_cast<float>(ctx.param("beta1", 0.9));
    const float beta2 = static_cast<float>(ctx.param("beta2", 0.999));
    const float eps = static_cast<float>(ctx.param("eps", 1e-8));
    const double step = ctx.param("step", 1);
    const float bc1 = static_cast<float>(1.0 - std::pow(ctx.param("beta1", 0.9), step));
    const float bc2 = static_cast<float>(1.0 - std::pow(ctx.param("beta2", 0.999), step));
    const float* g = ctx.input(0).as<const float>();
    const float* w = ctx.input(1).as<const float>();
    const float* m0 = ctx.input(2).as<const float>();
    const float* v0 = ctx.input(3).as<const float>();
    const pkbw::SymmetricMemory sym = ctx.symmetric("adam_host", static_cast<std::size_t>(p) * sizeof(float));
    float* mine = static_cast<float*>(sym.local);
    for (std::int64_t i = 0; i < p; ++i) {
        const float m = beta1 * m0[i] + (1.f - beta1) * g[i];
        const float v = beta2 * v0[i] + (1.f - beta2) * g[i] * g[i];
        mine[i] = w[i] - lr * (m / bc1) / (std::sqrt(v / bc2) + eps);
    }
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (int r = 0; r < ctx.world_size; ++r) {
        std::memcpy(out + r * p, sym.peers[r], static_cast<std::size_t>(p) * sizeof(float));
    }
    ctx.barrier();
    return 0;
}
