// Reference for PKB problem 11: transpose the shard to [K/W, M], ncclAllGather into A^T [K, M] (the
// rank-ordered stack of transposed shards is exactly A^T), then one cuBLAS GEMM C = (A^T)^T B.
#include "pkbw/solution.h"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/permute.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a_local = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& c = ctx.output(0);
    const long long m = a_local.shape[0], kl = a_local.shape[1], k = b.shape[0], n = b.shape[1];
    const std::size_t shard = a_local.nbytes();
    void* at_local = ctx.scratch("ag_gemm_at_local", shard);
    void* at = ctx.scratch("ag_gemm_at", shard * ctx.world_size);
    const long long shape[] = {m, kl};
    const int transpose[] = {1, 0};
    PKBW_TRY(pkbw::tk::permute(ctx, a_local.data, at_local, pkbw::element_size(a_local.dtype), 2, shape,
                               transpose));
    PKBW_CHECK(ctx, ncclAllGather(at_local, at, shard, ncclUint8, ctx.nccl(), ctx.stream()));
    // A^T is stored [K, M]: A enters transposed.
    pkbw::tk::Gemm g;
    g.dtype = a_local.dtype;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = at;
    g.trans_a = true;
    g.b = b.data;
    g.c = c.data;
    PKBW_TRY(pkbw::tk::gemm(ctx, g));
    return pkbw::tk::finish(ctx);
}
