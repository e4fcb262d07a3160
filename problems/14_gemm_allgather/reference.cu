// Reference for PKB problem 14: cuBLAS GEMM of the column shard, ncclAllGather into [W, M, N/W],
// then a permute into [M, N] (concatenation along columns).
#include "pkbw/solution.h"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/permute.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const long long m = a.shape[0], k = a.shape[1], nl = b.shape[1];
    const std::size_t local_bytes = static_cast<std::size_t>(m * nl) * pkbw::element_size(out.dtype);
    void* product = ctx.scratch("gemm_ag_product", local_bytes);
    void* gathered = ctx.scratch("gemm_ag_gathered", local_bytes * ctx.world_size);
    PKBW_TRY(pkbw::tk::matmul(ctx, a.dtype, m, nl, k, a.data, b.data, product));
    PKBW_CHECK(ctx, ncclAllGather(product, gathered, local_bytes, ncclUint8, ctx.nccl(), ctx.stream()));
    // [W, M, N/W] -> [M, W, N/W] = [M, N]
    const long long shape[] = {ctx.world_size, m, nl};
    const int perm[] = {1, 0, 2};
    PKBW_TRY(pkbw::tk::permute(ctx, gathered, out.data, pkbw::element_size(out.dtype), 3, shape, perm));
    return pkbw::tk::finish(ctx);
}
