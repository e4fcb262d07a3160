// Hand-written sample candidate (not LLM output)
// PKB 14 (GEMM on a column shard, then all-gather along columns) on the host backend: every rank
// writes its product A @ B_local [M, N/W] into a symmetric buffer; each rank then places rank r's
// product in columns [r*N/W, (r+1)*N/W) of its [M, N] output.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    if (a.dtype != pkbw::DType::F32 || b.dtype != pkbw::DType::F32) {
        return ctx.fail("host gemm-allgather sample: only f32 is supported");
    }
    const std::int64_t m = a.shape[0], k = a.shape[1], n_shard = b.shape[1];
    const std::int64_t n = n_shard * ctx.world_size;
    const std::size_t bytes = static_cast<std::size_t>(m * n_shard) * sizeof(float);
    const pkbw::SymmetricMemory sym = ctx.symmetric("gemm_allgather_host", bytes);
    float* product = static_cast<float*>(sym.local);
    const float* av = a.as<const float>();
    const float* bv = b.as<const float>();
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n_shard; ++j) {
            float sum = 0.f;
            for (std::int64_t p = 0; p < k; ++p) {
                sum += av[i * k + p] * bv[p * n_shard + j];
            }
            product[i * n_shard + j] = sum;
        }
    }
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (int r = 0; r < ctx.world_size; ++r) {
        const float* peer = static_cast<const float*>(sym.peers[r]);
        for (std::int64_t i = 0; i < m; ++i) {
            std::memcpy(out + i * n + r * n_shard, peer + i * n_shard,
                        static_cast<std::size_t>(n_shard) * sizeof(float));
        }
    }
    ctx.barrier();
    return 0;
}
