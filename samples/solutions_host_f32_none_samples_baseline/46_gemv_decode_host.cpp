// Hand-written sample candidate (not LLM output)
// PKB 46 (vocab-parallel GEMV decode) on the host backend: each rank writes its shard's logits
// h·Wᵀ + b into a symmetric buffer; after a barrier every rank copies all shards into [t, V].
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& h = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    if (h.dtype != pkbw::DType::F32) {
        return ctx.fail("host gemv-decode sample: only f32 is supported");
    }
    const std::int64_t tokens = h.shape[0], hidden = h.shape[1], local = w.shape[0];
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("gemv_host", static_cast<std::size_t>(tokens * local) * sizeof(float));
    const float* hv = h.as<const float>();
    const float* wv = w.as<const float>();
    const float* bv = ctx.input(2).as<const float>();
    float* mine = static_cast<float*>(sym.local);
    for (std::int64_t t = 0; t < tokens; ++t) {
        for (std::int64_t v = 0; v < local; ++v) {
            float dot = 0.f;
            for (std::int64_t k = 0; k < hidden; ++k) {
                dot += hv[t * hidden + k] * wv[v * hidden + k];
            }
            mine[t * local + v] = dot + bv[v];
        }
    }
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    const std::int64_t vocab = local * ctx.world_size;
    for (int r = 0; r < ctx.world_size; ++r) {
        const float* src = static_cast<const float*>(sym.peers[r]);
        for (std::int64_t t = 0; t < tokens; ++t) {
            std::memcpy(out + t * vocab + r * local, src + t * local,
                        static_cast<std::size_t>(local) * sizeof(float));
        }
    }
    ctx.barrier();
    return 0;
}
