// Reference for PKB problem 16: cuBLAS GEMM of the K shard into a dtype-D scratch [M, N], then
// ncclReduceScatter (sum) of its row blocks.
#include "pkbw/solution.h"
#include "pkbw/toolkit/gemm.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const long long m = a.shape[0], kl = a.shape[1], n = b.shape[1];
    void* partial = ctx.scratch("gemm_rs_partial", out.nbytes() * ctx.world_size);
    PKBW_TRY(pkbw::tk::matmul(ctx, a.dtype, m, n, kl, a.data, b.data, partial));
    PKBW_CHECK(ctx, ncclReduceScatter(partial, out.data, static_cast<size_t>(out.numel()),
                                      pkbw::nccl_dtype(out.dtype), ncclSum, ctx.nccl(), ctx.stream()));
    return 0;
}
