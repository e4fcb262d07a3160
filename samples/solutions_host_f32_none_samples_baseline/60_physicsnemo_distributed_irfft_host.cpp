// Hand-written sample candidate (not LLM output)
// PKB 60 (x [B, C, H/W, Wd/2 + 1] complex64 = this rank's H rows of the rfft2 spectrum of a real field;
// extended to the width Wd by Hermitian symmetry, ifft over the width with norm "ortho", all-to-all from H
// shards to width shards, ifft over H, the real part: float32 [B, C, H, Wd/W]) on the host backend. Each
// rank publishes its spectrum rows in a symmetric buffer; after a barrier it builds its full-width rows
// (columns k >= Wd/2 + 1 are conj(X[(H - h) mod H, Wd - k]), read from whichever rank holds that row),
// transforms them (a plain inverse DFT in double, stored as complex64 as torch stores x1) into a second
// symmetric buffer; after another barrier it reads its columns of every rank's rows and transforms them
// over H.
#include "pkbw/solution.h"

#include <cmath>
#include <complex>
#include <cstring>
#include <vector>

namespace {

// out[k] = (1/sqrt(n)) Σ_j in[j] exp(+2πi jk/n), the twiddles from one table indexed by jk mod n.
void inverse_dft(const std::vector<std::complex<double>>& in, std::vector<std::complex<double>>& out) {
    const std::size_t n = in.size();
    std::vector<std::complex<double>> twiddle(n);
    for (std::size_t k = 0; k < n; ++k) {
        twiddle[k] = std::polar(1.0, 2.0 * M_PI * static_cast<double>(k) / static_cast<double>(n));
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(n));
    out.assign(n, {0.0, 0.0});
    for (std::size_t k = 0; k < n; ++k) {
        std::complex<double> sum = 0;
        for (std::size_t j = 0; j < n; ++j) {
            sum += in[j] * twiddle[j * k % n];
        }
        out[k] = sum * scale;
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& input = ctx.input(0);
    const pkbw::TensorView& output = ctx.output(0);
    if (input.dtype != pkbw::DType::C64 || output.dtype != pkbw::DType::F32) {
        return ctx.fail("this sample expects complex64 x and a float32 output");
    }
    const int world = ctx.world_size, me = ctx.rank;
    const long long fields = input.shape[0] * input.shape[1], rows = input.shape[2], bins = input.shape[3],
                    height = rows * world, local = output.shape[3], width = local * world;
    using cf = std::complex<float>;
    const std::size_t spectrum_bytes = static_cast<std::size_t>(fields * rows * bins) * sizeof(cf);
    const pkbw::SymmetricMemory spectra = ctx.symmetric("irfft60_spectrum", spectrum_bytes);
    const pkbw::SymmetricMemory x1s =
        ctx.symmetric("irfft60_x1", static_cast<std::size_t>(fields * rows * width) * sizeof(cf));
    std::memcpy(spectra.local, input.data, spectrum_bytes);
    ctx.barrier();

    // X[f, row, col] of the whole spectrum, from the rank that holds the row.
    const auto spectrum = [&](long long f, long long row, long long col) {
        const auto* peer = static_cast<const cf*>(spectra.peers[row / rows]);
        return std::complex<double>(peer[(f * rows + row % rows) * bins + col]);
    };
    auto* x1 = static_cast<cf*>(x1s.local);
    std::vector<std::complex<double>> line, result;
    for (long long f = 0; f < fields; ++f) {
        for (long long h = 0; h < rows; ++h) {
            const long long row = me * rows + h, mirror = (height - row) % height;
            line.resize(static_cast<std::size_t>(width));
            for (long long k = 0; k < width; ++k) {
                line[k] = k < bins ? spectrum(f, row, k) : std::conj(spectrum(f, mirror, width - k));
            }
            inverse_dft(line, result);
            for (long long k = 0; k < width; ++k) {
                x1[(f * rows + h) * width + k] = cf(result[k]);
            }
        }
    }
    ctx.barrier();

    auto* out = output.as<float>();
    for (long long f = 0; f < fields; ++f) {
        for (long long w = 0; w < local; ++w) {
            line.resize(static_cast<std::size_t>(height));
            for (long long row = 0; row < height; ++row) {
                const auto* peer = static_cast<const cf*>(x1s.peers[row / rows]);
                line[row] = std::complex<double>(peer[(f * rows + row % rows) * width + me * local + w]);
            }
            inverse_dft(line, result);
            for (long long row = 0; row < height; ++row) {
                out[(f * height + row) * local + w] = static_cast<float>(result[row].real());
            }
        }
    }
    ctx.barrier(); // peers may still read this rank's buffers
    return 0;
}
