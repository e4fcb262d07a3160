// Hand-written sample candidate (not LLM output)
// PKB 12 (all-gather A along K, then A @ B) on the host backend: every rank publishes its K-shard
// A_local [M, K/W] in a symmetric buffer; after a barrier each rank assembles the full A [M, K] row
// by row from the peers and multiplies it by its own B [K, N].
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a_local = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    if (a_local.dtype != pkbw::DType::F32 || b.dtype != pkbw::DType::F32) {
        return ctx.fail("host allgather-gemm sample: only f32 is supported");
    }
    const int world = ctx.world_size;
    const std::int64_t m = a_local.shape[0], k_shard = a_local.shape[1], n = b.shape[1];
    const std::int64_t k = k_shard * world;
    const pkbw::SymmetricMemory sym = ctx.symmetric("allgather_gemm_host", a_local.nbytes());
    std::memcpy(sym.local, a_local.data, a_local.nbytes());
    ctx.barrier();
    std::vector<float> a(static_cast<std::size_t>(m * k));
    for (std::int64_t i = 0; i < m; ++i) {
        for (int r = 0; r < world; ++r) {
            std::memcpy(a.data() + i * k + r * k_shard, static_cast<const float*>(sym.peers[r]) + i * k_shard,
                        static_cast<std::size_t>(k_shard) * sizeof(float));
        }
    }
    ctx.barrier(); // the gathered copy is private from here on
    const float* bv = b.as<const float>();
    float* c = ctx.output(0).as<float>();
    std::memset(c, 0, static_cast<std::size_t>(m * n) * sizeof(float));
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t p = 0; p < k; ++p) {
            const float aip = a[i * k + p];
            for (std::int64_t j = 0; j < n; ++j) {
                c[i * n + j] += aip * bv[p * n + j];
            }
        }
    }
    return 0;
}
