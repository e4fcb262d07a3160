// Hand-written sample candidate (not LLM output)
// PKB 59 (x [B, H, Wd/W] float32 = this rank's width shard of a [B, H, Wd] field; fft over H with norm
// "ortho", all-to-all from width shards to H shards, fft over the width, the first Wd/2 + 1 bins:
// complex64 [B, H/W, Wd/2 + 1]) on the host backend. Each rank transforms its columns over H (a plain
// DFT in double, stored as complex64 as torch stores x1) into a symmetric buffer; after a barrier it
// reads its H rows of every rank's columns, which make whole rows of the width, and transforms them.
#include "pkbw/solution.h"

#include <cmath>
#include <complex>
#include <vector>

namespace {

// out[k] = scale Σ_j in[j] exp(-2πi jk/n), with the twiddles from one table indexed by jk mod n.
void dft(const std::vector<std::complex<double>>& in, std::vector<std::complex<double>>& out) {
    const std::size_t n = in.size();
    std::vector<std::complex<double>> twiddle(n);
    for (std::size_t k = 0; k < n; ++k) {
        twiddle[k] = std::polar(1.0, -2.0 * M_PI * static_cast<double>(k) / static_cast<double>(n));
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
    if (input.dtype != pkbw::DType::F32 || ctx.output(0).dtype != pkbw::DType::C64) {
        return ctx.fail("this sample expects float32 x and a complex64 output");
    }
    const int world = ctx.world_size, me = ctx.rank;
    const long long batch = input.shape[0], height = input.shape[1], local = input.shape[2],
                    width = local * world, rows = height / world, bins = width / 2 + 1;
    const float* x = input.as<float>();
    const pkbw::SymmetricMemory x1s = ctx.symmetric(
        "rfft59_x1", static_cast<std::size_t>(batch * height * local) * sizeof(std::complex<float>));
    auto* x1 = static_cast<std::complex<float>*>(x1s.local);

    std::vector<std::complex<double>> line, spectrum;
    for (long long b = 0; b < batch; ++b) {
        for (long long w = 0; w < local; ++w) {
            line.assign(static_cast<std::size_t>(height), {0.0, 0.0});
            for (long long h = 0; h < height; ++h) {
                line[h] = x[(b * height + h) * local + w];
            }
            dft(line, spectrum);
            for (long long h = 0; h < height; ++h) {
                x1[(b * height + h) * local + w] = std::complex<float>(spectrum[h]);
            }
        }
    }
    ctx.barrier();

    auto* out = ctx.output(0).as<std::complex<float>>();
    for (long long b = 0; b < batch; ++b) {
        for (long long h = 0; h < rows; ++h) {
            line.assign(static_cast<std::size_t>(width), {0.0, 0.0});
            for (int s = 0; s < world; ++s) {
                const auto* peer = static_cast<const std::complex<float>*>(x1s.peers[s]);
                for (long long w = 0; w < local; ++w) {
                    line[s * local + w] =
                        std::complex<double>(peer[(b * height + me * rows + h) * local + w]);
                }
            }
            dft(line, spectrum);
            for (long long k = 0; k < bins; ++k) {
                out[(b * rows + h) * bins + k] = std::complex<float>(spectrum[k]);
            }
        }
    }
    ctx.barrier(); // peers may still read this rank's buffer
    return 0;
}
