// Reference for PKB problem 44: the toolkit's block absmax (on a zero-padded copy when the length is
// not a multiple of the block, as PKB's F.pad), a kernel for the scales and the dequantised fp32
// values (as torch on CUDA: the division by the Python scalar 127 is a multiplication by the fp32
// reciprocal 1/127; x / scale a true division; rintf rounds half to even), an in-place fp32
// ncclAllReduce, then acc * (1/W) (torch's div_ by a Python int, again a reciprocal multiplication)
// cast to D.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

using pkbw::tk::from_float;
using pkbw::tk::to_float;

template <class T>
__global__ void quant_dequant(const T* x, const float* absmax, float* rec, long long n, int block) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        const float scale = fmaxf(absmax[i / block], 1e-8f) * (1.0f / 127.0f);
        const float q = fminf(fmaxf(rintf(__fdiv_rn(to_float(x[i]), scale)), -127.f), 127.f);
        rec[i] = q * scale;
    }
}

template <class T>
__global__ void mean_to_dtype(const float* acc, T* out, long long n, float inv_world) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP)
        out[i] = from_float<T>(acc[i] * inv_world);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const long long n = x.numel();
    const int block = static_cast<int>(ctx.param("block_size", 128));
    if (block < 1) {
        return ctx.fail("44 reference: block_size must be at least 1");
    }
    const long long blocks = (n + block - 1) / block;
    const std::size_t size = pkbw::element_size(x.dtype);
    const void* padded = x.data;
    if (blocks * block != n) {
        void* buffer = ctx.scratch("q44_padded", static_cast<std::size_t>(blocks * block) * size);
        PKBW_CHECK(ctx,
                   cudaMemsetAsync(buffer, 0, static_cast<std::size_t>(blocks * block) * size, ctx.stream()));
        PKBW_CHECK(ctx, cudaMemcpyAsync(buffer, x.data, x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
        padded = buffer;
    }
    float* absmax =
        static_cast<float*>(ctx.scratch("q44_absmax", static_cast<std::size_t>(blocks) * sizeof(float)));
    PKBW_TRY(pkbw::tk::block_absmax(ctx, x.dtype, padded, blocks * block, block, absmax));
    float* rec = static_cast<float*>(ctx.scratch("q44_rec", static_cast<std::size_t>(n) * sizeof(float)));
    return pkbw::tk::dispatch_float(ctx, x.dtype, "44 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        quant_dequant<T>
            <<<pkbw::tk::grid_for(n), 256, 0, ctx.stream()>>>(x.as<const T>(), absmax, rec, n, block);
        PKBW_CHECK(ctx, ncclAllReduce(rec, rec, static_cast<size_t>(n), ncclFloat32, ncclSum, ctx.nccl(),
                                      ctx.stream()));
        const float inv_world = 1.0f / static_cast<float>(ctx.world_size);
        mean_to_dtype<T>
            <<<pkbw::tk::grid_for(n), 256, 0, ctx.stream()>>>(rec, ctx.output(0).as<T>(), n, inv_world);
        return pkbw::tk::finish(ctx);
    });
}
