// Reference for PKB problem 59: x [B, H, Wl] (fp32, this rank's width shard) widened to complex64,
// tk::fft_axis over H (ortho); the H chunks packed per destination (tk::permute [B, W, H/W, Wl] ->
// [W, B, H/W, Wl]) and exchanged with tk::all_to_all; the received shards concatenated along the width
// (tk::permute [W, B, H/W, Wl] -> [B, H/W, W, Wl] = [B, H/W, Wd]); tk::fft_axis over the width (ortho);
// the first Wd/2 + 1 bins of every row copied out (cudaMemcpy2DAsync).
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/fft_axis.cuh"
#include "pkbw/toolkit/permute.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& x = ctx.input(0);
    const int world = ctx.world_size;
    const long long batch = x.shape[0], height = x.shape[1], local = x.shape[2], width = local * world,
                    rows = height / world, bins = width / 2 + 1, count = batch * height * local;
    if (x.dtype != pkbw::DType::F32 || height % world != 0) {
        return ctx.fail("59 reference: x must be float32 with W dividing H");
    }
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(cufftComplex);
    auto* field = static_cast<cufftComplex*>(ctx.scratch("rfft59_field", bytes));
    auto* packed = static_cast<cufftComplex*>(ctx.scratch("rfft59_packed", bytes));
    if (!field || !packed) {
        return ctx.fail("59 reference: no scratch memory");
    }
    const auto scale = [](long long n) {
        return static_cast<float>(tk::fft_scale(tk::FftNorm::ortho, n, false));
    };

    PKBW_TRY(tk::real_to_complex(ctx, x.as<float>(), field, count));
    PKBW_TRY(tk::fft_axis(ctx, {batch, height, local}, field, field, CUFFT_FORWARD, scale(height)));
    const long long by_destination[] = {batch, world, rows, local};
    const int to_destination[] = {1, 0, 2, 3};
    PKBW_TRY(tk::permute(ctx, field, packed, sizeof(cufftComplex), 4, by_destination, to_destination));
    PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), packed, field, bytes / world));
    const long long by_source[] = {world, batch, rows, local};
    const int width_last[] = {1, 2, 0, 3};
    PKBW_TRY(tk::permute(ctx, field, packed, sizeof(cufftComplex), 4, by_source, width_last));
    PKBW_TRY(tk::fft_axis(ctx, {batch * rows, width, 1}, packed, packed, CUFFT_FORWARD, scale(width)));
    const std::size_t row_bytes = static_cast<std::size_t>(bins) * sizeof(cufftComplex);
    PKBW_CHECK(ctx, cudaMemcpy2DAsync(ctx.output(0).data, row_bytes, packed, width * sizeof(cufftComplex),
                                      row_bytes, static_cast<std::size_t>(batch * rows),
                                      cudaMemcpyDeviceToDevice, ctx.stream()));
    return tk::finish(ctx);
}
