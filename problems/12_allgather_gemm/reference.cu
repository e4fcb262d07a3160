// Reference for PKB problem 12: ncclAllGather of the A shards into [W, M, K/W], a permute into
// A [M, K] (concatenation along K), then one cuBLAS GEMM with fp32 accumulation.
#include "pkbw/solution.h"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/permute.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a_local = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& c = ctx.output(0);
    const long long m = a_local.shape[0], kl = a_local.shape[1], k = b.shape[0], n = b.shape[1];
    const std::size_t shard = a_local.nbytes();
    void* gathered = ctx.scratch("ag_gemm_gathered", shard * ctx.world_size);
    void* a_full = ctx.scratch("ag_gemm_a", shard * ctx.world_size);
    PKBW_CHECK(ctx, ncclAllGather(a_local.data, gathered, shard, ncclUint8, ctx.nccl(), ctx.stream()));
    // [W, M, K/W] -> [M, W, K/W] = [M, K]
    const long long shape[] = {ctx.world_size, m, kl};
    const int perm[] = {1, 0, 2};
    PKBW_TRY(pkbw::tk::permute(ctx, gathered, a_full, pkbw::element_size(a_local.dtype), 3, shape, perm));
    PKBW_TRY(pkbw::tk::matmul(ctx, a_local.dtype, m, n, k, a_full, b.data, c.data));
    return pkbw::tk::finish(ctx);
}
