// Host oracle for PKB problem 59: this rank's columns transformed over H in double (tk::fft_axis_f64,
// ortho) and rounded to complex64 (PKB stores x1); every rank's x1 gathered; this rank's H rows over the
// whole width (shards in rank order) transformed over the width in double (ortho), the first Wd/2 + 1
// bins rounded to complex64.
#include "pkbw/solution.h"
#include "pkbw/toolkit/fft_axis_host.h"
#include "pkbw/toolkit/host.h"

#include <complex>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& x = ctx.input(0);
    const int world = ctx.world_size, me = ctx.rank;
    const long long batch = x.shape[0], height = x.shape[1], local = x.shape[2], width = local * world,
                    rows = height / world, bins = width / 2 + 1;
    if (x.dtype != pkbw::DType::F32 || height % world != 0) {
        return ctx.fail("59 oracle: x must be float32 with W dividing H");
    }
    const std::vector<double> real = tk::to_f64(x);
    std::vector<std::complex<double>> x1(real.begin(), real.end());
    tk::fft_axis_f64(x1, {batch, height, local}, false, tk::fft_scale(tk::FftNorm::ortho, height, false));
    for (auto& v : x1) {
        v = tk::round_to_complex64(v);
    }
    const std::vector<std::complex<double>> all =
        tk::from_interleaved(tk::all_gather_f64(ctx, tk::interleaved(x1)));

    // [B, H/W, Wd]: row h of this rank's chunk, column s·Wl + w from source s's x1[b, me·H/W + h, w].
    std::vector<std::complex<double>> x2(static_cast<std::size_t>(batch * rows * width));
    for (long long b = 0; b < batch; ++b)
        for (long long h = 0; h < rows; ++h)
            for (long long s = 0; s < world; ++s)
                for (long long w = 0; w < local; ++w) {
                    const long long from = ((s * batch + b) * height + me * rows + h) * local + w;
                    x2[static_cast<std::size_t>((b * rows + h) * width + s * local + w)] =
                        all[static_cast<std::size_t>(from)];
                }
    tk::fft_axis_f64(x2, {batch * rows, width, 1}, false, tk::fft_scale(tk::FftNorm::ortho, width, false));
    std::vector<std::complex<double>> out(static_cast<std::size_t>(batch * rows * bins));
    for (long long r = 0; r < batch * rows; ++r)
        for (long long k = 0; k < bins; ++k) {
            out[static_cast<std::size_t>(r * bins + k)] =
                tk::round_to_complex64(x2[static_cast<std::size_t>(r * width + k)]);
        }
    tk::store_complex64(ctx.output(0), out);
    return 0;
}
