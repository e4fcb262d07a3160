// Reference for PKB problem 19: one warp per 128-element block computes the absmax scale and the
// e4m3 values (round to nearest, saturating, as Triton's cast on sm_90), then two ncclAllGather
// calls stack every rank's values and scales.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cuda_fp8.h>

namespace {

// PKB's reference kernel is Triton, whose fp32 `/` lowers to PTX div.full.f32 (approximate, within
// 2 ulp) rather than IEEE division; near a rounding boundary of e4m3 one ulp of the quotient flips the
// fp8 value (32 at the top of the range). Dividing the same way reproduces PKB's values bit for bit.
__device__ float triton_div(float a, float b) {
    float q;
    asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a), "f"(b));
    return q;
}

template <class T>
__global__ void quantize(const T* x, unsigned char* y, float* s, long long blocks, int block) {
    const long long warp = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (warp >= blocks)
        return;
    const T* xb = x + warp * block;
    const float amax = pkbw::tk::warp_absmax(xb, block, lane);
    const float scale = triton_div(amax, 448.0f);
    const float safe = scale == 0.f ? 1.f : scale;
    // The hardware's saturating cast (pkbw::tk::e4m3_from_float_satfinite is the same rule in software).
    for (int i = lane; i < block; i += 32)
        y[warp * block + i] =
            __nv_cvt_float_to_fp8(triton_div(pkbw::tk::to_float(xb[i]), safe), __NV_SATFINITE, __NV_E4M3);
    if (lane == 0)
        s[warp] = scale;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const int block = static_cast<int>(ctx.param("block_size", 128));
    const long long blocks = x.numel() / block;
    unsigned char* y =
        static_cast<unsigned char*>(ctx.scratch("fp8q_y", static_cast<std::size_t>(x.numel())));
    float* s = static_cast<float*>(ctx.scratch("fp8q_s", static_cast<std::size_t>(blocks) * sizeof(float)));
    const unsigned grid = static_cast<unsigned>((blocks * 32 + 255) / 256);
    PKBW_TRY(pkbw::tk::dispatch_float(ctx, x.dtype, "19_blocked_fp8_quantize reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        quantize<<<grid, 256, 0, ctx.stream()>>>(x.as<const T>(), y, s, blocks, block);
        return 0;
    }));
    PKBW_CHECK(ctx, ncclAllGather(y, ctx.output(0).data, static_cast<size_t>(x.numel()), ncclUint8,
                                  ctx.nccl(), ctx.stream()));
    PKBW_CHECK(ctx, ncclAllGather(s, ctx.output(1).data, static_cast<size_t>(blocks), ncclFloat32, ctx.nccl(),
                                  ctx.stream()));
    return pkbw::tk::finish(ctx);
}
