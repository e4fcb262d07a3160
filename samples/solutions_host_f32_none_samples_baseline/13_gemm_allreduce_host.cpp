// Hand-written sample candidate (not LLM output)
// PKB 13 (local GEMM, then all-reduce of the products) on the host backend: every rank computes
// P = A_local @ B_local [M, N] straight into a symmetric buffer; after a barrier each rank sums
// every rank's P element by element into its output.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    if (a.dtype != pkbw::DType::F32 || b.dtype != pkbw::DType::F32) {
        return ctx.fail("host gemm-allreduce sample: only f32 is supported");
    }
    const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
    const std::size_t bytes = static_cast<std::size_t>(m * n) * sizeof(float);
    const pkbw::SymmetricMemory sym = ctx.symmetric("gemm_allreduce_host", bytes);
    float* product = static_cast<float*>(sym.local);
    std::memset(product, 0, bytes);
    const float* av = a.as<const float>();
    const float* bv = b.as<const float>();
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t p = 0; p < k; ++p) {
            const float aip = av[i * k + p];
            for (std::int64_t j = 0; j < n; ++j) {
                product[i * n + j] += aip * bv[p * n + j];
            }
        }
    }
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (std::int64_t e = 0; e < m * n; ++e) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r) {
            sum += static_cast<const float*>(sym.peers[r])[e];
        }
        out[e] = sum;
    }
    ctx.barrier();
    return 0;
}
