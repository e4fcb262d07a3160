// Reference for PKB problem 30: three ncclAllReduce calls (SUM in D) in one group, input to output.
// PKB reduces in place and returns the inputs; pkbw's outputs are separate buffers, so the sums are
// written there and the inputs are left as they were.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    PKBW_CHECK(ctx, ncclGroupStart());
    ncclResult_t rc = ncclSuccess;
    for (int k = 0; k < 3 && rc == ncclSuccess; ++k) {
        const pkbw::TensorView& in = ctx.input(k);
        rc = ncclAllReduce(in.data, ctx.output(k).data, static_cast<size_t>(in.numel()),
                           pkbw::nccl_dtype(in.dtype), ncclSum, ctx.nccl(), ctx.stream());
    }
    const ncclResult_t end = ncclGroupEnd();
    PKBW_CHECK(ctx, rc);
    PKBW_CHECK(ctx, end);
    return 0;
}
