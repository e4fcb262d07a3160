// Host oracle for PKB problem 60: every rank's spectrum rows gathered (x is complex64, exact in double);
// this rank's rows extended to the full width by Hermitian symmetry (columns k >= K = Wd/2 + 1 are
// conj(x[(H - h) mod H, Wd - k]), PKB's conj flip along the width and flip along H), transformed over the
// width in double (tk::planned_fft_axis_f64, inverse, ortho) and rounded to complex64 (PKB stores x1); every
// rank's x1 gathered; this rank's columns of all H rows (sources in rank order) transformed over H in
// double (inverse, ortho), the real part rounded to float32.
#include "pkbw/solution.h"
#include "pkbw/toolkit/dft_plan_host.h"
#include "pkbw/toolkit/fft_axis_host.h"
#include "pkbw/toolkit/host.h"

#include <complex>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const int world = ctx.world_size, me = ctx.rank;
    const long long fields = x.shape[0] * x.shape[1], per_rank = x.shape[2], bins = x.shape[3],
                    height = per_rank * world, local = out.shape[3], width = local * world;
    if (x.dtype != pkbw::DType::C64 || out.dtype != pkbw::DType::F32 || width / 2 + 1 != bins) {
        return ctx.fail("60 oracle: x must be complex64 [B, C, H/W, Wd/2 + 1] and the output float32 "
                        "[B, C, H, Wd/W]");
    }
    const auto* parts = static_cast<const float*>(x.data);
    std::vector<double> mine(parts, parts + 2 * fields * per_rank * bins);
    const std::vector<std::complex<double>> spectrum =
        tk::from_interleaved(tk::all_gather_f64(ctx, mine)); // [W, F, H/W, K]
    const auto at = [&](long long f, long long row, long long col) {
        const long long owner = row / per_rank, r = row % per_rank;
        return spectrum[static_cast<std::size_t>(((owner * fields + f) * per_rank + r) * bins + col)];
    };

    std::vector<std::complex<double>> x1(static_cast<std::size_t>(fields * per_rank * width));
    for (long long f = 0; f < fields; ++f)
        for (long long h = 0; h < per_rank; ++h)
            for (long long k = 0; k < width; ++k) {
                const long long row = me * per_rank + h;
                x1[static_cast<std::size_t>((f * per_rank + h) * width + k)] =
                    k < bins ? at(f, row, k) : std::conj(at(f, (height - row) % height, width - k));
            }
    tk::planned_fft_axis_f64(x1, {fields * per_rank, width, 1}, true,
                             tk::fft_scale(tk::FftNorm::ortho, width, true));
    for (auto& v : x1) {
        v = tk::round_to_complex64(v);
    }
    const std::vector<std::complex<double>> all =
        tk::from_interleaved(tk::all_gather_f64(ctx, tk::interleaved(x1))); // [W, F, H/W, Wd]

    // [F, H, Wd/W]: row s·H/W + h from source s's x1[f, h, me·Wd/W + w].
    std::vector<std::complex<double>> x2(static_cast<std::size_t>(fields * height * local));
    for (long long f = 0; f < fields; ++f)
        for (long long s = 0; s < world; ++s)
            for (long long h = 0; h < per_rank; ++h)
                for (long long w = 0; w < local; ++w) {
                    const long long from = ((s * fields + f) * per_rank + h) * width + me * local + w;
                    x2[static_cast<std::size_t>((f * height + s * per_rank + h) * local + w)] =
                        all[static_cast<std::size_t>(from)];
                }
    tk::planned_fft_axis_f64(x2, {fields, height, local}, true,
                             tk::fft_scale(tk::FftNorm::ortho, height, true));
    std::vector<double> real(x2.size());
    for (std::size_t i = 0; i < x2.size(); ++i) {
        real[i] = x2[i].real();
    }
    tk::store_all(out, real);
    return 0;
}
