// Reference for PKB problem 20: an elementwise y * s kernel into fp32 scratch, then an all-to-all of
// equal chunks with grouped ncclSend/ncclRecv.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

template <class T>
__global__ void dequantize(const T* y, const T* s, float* x, long long count, int block) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP)
        x[i] = pkbw::tk::to_float(y[i]) * pkbw::tk::to_float(s[i / block]);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& y = ctx.input(0);
    const pkbw::TensorView& s = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const int block = static_cast<int>(ctx.param("block_size", 128));
    const long long count = y.numel();
    float* x = static_cast<float*>(ctx.scratch("fp8dq_x", out.nbytes()));
    PKBW_TRY(pkbw::tk::dispatch_float(ctx, y.dtype, "20_blocked_fp8_dequantize reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        dequantize<<<pkbw::tk::grid_for(count), 256, 0, ctx.stream()>>>(y.as<const T>(), s.as<const T>(), x,
                                                                        count, block);
        return 0;
    }));
    PKBW_TRY(pkbw::tk::all_to_all(ctx, ctx.nccl(), x, out.data, out.nbytes() / ctx.world_size));
    return pkbw::tk::finish(ctx);
}
