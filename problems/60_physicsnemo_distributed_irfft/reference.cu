// Reference for PKB problem 60: x [F, H/W, K] (complex64, this rank's rows of the rfft2 spectrum, F = B·C,
// K = Wd/2 + 1) all-gathered along H (ncclAllGather: [W, F, H/W, K]); this rank's rows extended to the
// full width by Hermitian symmetry (one kernel: columns k < K are x, columns k >= K are conj(x[-h, Wd - k])
// with -h = (H - h) mod H, which is PKB's conj flip along the width followed by its flip along H);
// tk::fft_axis over the width (inverse, ortho); the width chunks packed per destination (tk::permute
// [F, H/W, W, Wd/W] -> [W, F, H/W, Wd/W]) and exchanged with tk::all_to_all; the received row blocks
// concatenated along H (tk::permute [W, F, H/W, Wd/W] -> [F, W, H/W, Wd/W] = [F, H, Wd/W]); tk::fft_axis
// over H (inverse, ortho); the real part.
//
// PKB gathers the padded spectrum (Wd columns); the columns k >= K are derived from the others, so this
// reference gathers the K columns of x, the same values.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/fft_axis.cuh"
#include "pkbw/toolkit/permute.cuh"

namespace {

// rows [F, H/W, Wd] of this rank (global rows rank·H/W ...) from the gathered spectrum [W, F, H/W, K].
__global__ void hermitian_rows(const cufftComplex* gathered, cufftComplex* rows, long long fields,
                               long long height, long long per_rank, long long bins, long long width,
                               int rank) {
    const long long total = fields * per_rank * width;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP) {
        const long long k = i % width, h = (i / width) % per_rank, f = i / (width * per_rank);
        const long long global = rank * per_rank + h;
        const long long source_row = k < bins ? global : (height - global) % height;
        const long long source_col = k < bins ? k : width - k;
        const long long owner = source_row / per_rank, local = source_row % per_rank;
        const cufftComplex v = gathered[((owner * fields + f) * per_rank + local) * bins + source_col];
        rows[i] = k < bins ? v : cufftComplex{v.x, -v.y};
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const int world = ctx.world_size;
    const long long fields = x.shape[0] * x.shape[1], per_rank = x.shape[2], bins = x.shape[3],
                    height = per_rank * world, width = out.shape[3] * world, local = out.shape[3],
                    count = fields * per_rank * width;
    if (x.dtype != pkbw::DType::C64 || out.dtype != pkbw::DType::F32 || width / 2 + 1 != bins ||
        width % world != 0) {
        return ctx.fail("60 reference: x must be complex64 [B, C, H/W, Wd/2 + 1] and the output float32 "
                        "[B, C, H, Wd/W]");
    }
    const std::size_t spectrum_bytes =
        static_cast<std::size_t>(fields * per_rank * bins) * sizeof(cufftComplex);
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(cufftComplex);
    auto* gathered = static_cast<cufftComplex*>(ctx.scratch("irfft60_gathered", spectrum_bytes * world));
    auto* rows = static_cast<cufftComplex*>(ctx.scratch("irfft60_rows", bytes));
    auto* packed = static_cast<cufftComplex*>(ctx.scratch("irfft60_packed", bytes));
    if (!gathered || !rows || !packed) {
        return ctx.fail("60 reference: no scratch memory");
    }
    const auto scale = [](long long n) {
        return static_cast<float>(tk::fft_scale(tk::FftNorm::ortho, n, true));
    };

    PKBW_CHECK(ctx, ncclAllGather(x.data, gathered, spectrum_bytes, ncclUint8, ctx.nccl(), ctx.stream()));
    hermitian_rows<<<tk::grid_for(count), 256, 0, ctx.stream()>>>(gathered, rows, fields, height, per_rank,
                                                                  bins, width, ctx.rank);
    PKBW_TRY(tk::finish(ctx));
    PKBW_TRY(tk::fft_axis(ctx, {fields * per_rank, width, 1}, rows, rows, CUFFT_INVERSE, scale(width)));
    const long long by_destination[] = {fields, per_rank, world, local};
    const int to_destination[] = {2, 0, 1, 3};
    PKBW_TRY(tk::permute(ctx, rows, packed, sizeof(cufftComplex), 4, by_destination, to_destination));
    PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), packed, rows, bytes / world));
    const long long by_source[] = {world, fields, per_rank, local};
    const int height_major[] = {1, 0, 2, 3};
    PKBW_TRY(tk::permute(ctx, rows, packed, sizeof(cufftComplex), 4, by_source, height_major));
    PKBW_TRY(tk::fft_axis(ctx, {fields, height, local}, packed, packed, CUFFT_INVERSE, scale(height)));
    PKBW_TRY(tk::complex_real_part(ctx, packed, out.as<float>(), count));
    return tk::finish(ctx);
}
