// Hand-written sample candidate (not LLM output)
// PKB 11 (all-gather of A's transposed K-shards, then A @ B) on the host backend. The transposes in
// PKB's reference only change the layout, so every rank reads the K-shards [M, K/W] of all ranks
// from a symmetric buffer and accumulates C = A @ B_local, one shard of K at a time.
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a_local = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    if (a_local.dtype != pkbw::DType::F32 || b.dtype != pkbw::DType::F32) {
        return ctx.fail("host allgather-gemm-AT sample: only f32 is supported");
    }
    const std::int64_t m = a_local.shape[0], k_shard = a_local.shape[1], n = b.shape[1];
    if (b.shape[0] != k_shard * ctx.world_size) {
        return ctx.fail("host allgather-gemm-AT sample: B must have W * K_local rows");
    }
    const pkbw::SymmetricMemory sym = ctx.symmetric("allgather_gemm_at_host", a_local.nbytes());
    std::memcpy(sym.local, a_local.data, a_local.nbytes());
    ctx.barrier();
    const float* bv = b.as<const float>();
    std::vector<float> acc(static_cast<std::size_t>(m * n), 0.f);
    for (int r = 0; r < ctx.world_size; ++r) {
        const float* shard = static_cast<const float*>(sym.peers[r]);
        for (std::int64_t i = 0; i < m; ++i) {
            float* crow = acc.data() + i * n;
            for (std::int64_t j = 0; j < k_shard; ++j) {
                const float a = shard[i * k_shard + j];
                const float* brow = bv + (r * k_shard + j) * n;
                for (std::int64_t col = 0; col < n; ++col) {
                    crow[col] += a * brow[col];
                }
            }
        }
    }
    ctx.barrier();
    std::memcpy(ctx.output(0).data, acc.data(), acc.size() * sizeof(float));
    return 0;
}
