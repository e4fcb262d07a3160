// Deliberately wrong candidate for problem 1 (GPU check): correct on every rank except rank 1, which
// adds 1 to element 7 of its output. The eval must fail with a mismatch naming rank 1 only.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

__global__ void corrupt_one(__nv_bfloat16* out) {
    out[7] = __float2bfloat16(__bfloat162float(out[7]) + 1.0f);
}

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const ncclResult_t r = ncclAllReduce(in.data, out.data, static_cast<size_t>(in.numel()), pkbw::nccl_dtype(in.dtype),
                                         ncclSum, ctx.nccl(), ctx.stream());
    if (r != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(r));
    }
    if (ctx.rank == 1 && in.dtype == pkbw::DType::BF16) {
        corrupt_one<<<1, 1, 0, ctx.stream()>>>(out.as<__nv_bfloat16>());
    }
    return cudaGetLastError() == cudaSuccess ? 0 : ctx.fail("launch failed");
}
