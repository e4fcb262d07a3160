// Reference for PKB problem 13: cuBLAS GEMM into a dtype-D scratch product (PKB materialises it),
// then ncclAllReduce (sum) into the output.
#include "pkbw/solution.h"
#include "pkbw/toolkit/gemm.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    void* product = ctx.scratch("gemm_ar_product", out.nbytes());
    PKBW_TRY(pkbw::tk::matmul(ctx, a.dtype, a.shape[0], b.shape[1], a.shape[1], a.data, b.data, product));
    PKBW_CHECK(ctx, ncclAllReduce(product, out.data, static_cast<size_t>(out.numel()),
                                  pkbw::nccl_dtype(out.dtype), ncclSum, ctx.nccl(), ctx.stream()));
    return 0;
}
