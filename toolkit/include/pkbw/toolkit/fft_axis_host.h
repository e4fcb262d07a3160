// Float64 twin of fft_axis.cuh for host oracles (59, 60): complex DFTs of any length along one axis.
//
//   dft_f64(a, inverse)                  in-place DFT of any length, unscaled both ways (as cuFFT):
//                                        fft_f64's radix 2 when the length is a power of two, else
//                                        Bluestein's chirp z-transform over a power-of-two FFT
//   fft_axis_f64(data, axis, inverse, scale)
//                                        every line of [outer, n, inner] (fft_axis.h) transformed along
//                                        n, then multiplied by scale
//   interleaved(values) / from_interleaved(values)
//                                        complex values as (re, im) doubles, for all_gather_f64
//   store_complex64(out, values)         a complex64 output, each part rounded to fp32
//
// The oracle's transform is the exact DFT to double precision (Bluestein's error stays near the
// radix-2 one: the chirp's angles are reduced mod 2n before the sine and cosine); the fp32 FFTs of
// the reference and of PKB differ from it by their own rounding, which the comparison tolerates.
#pragma once

#include "pkbw/toolkit/dft_plan_host.h"
#include "pkbw/toolkit/fft_axis.h"
#include "pkbw/toolkit/fft_conv_host.h"
#include "pkbw/toolkit/host.h"

#include <complex>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

namespace pkbw::tk {

namespace detail {

// X_k = w_k Σ_j (x_j w_j) conj(w_{k-j}) with w_j = exp(∓iπ j²/n): a circular convolution of length
// m >= 2n - 1 (a power of two), done with fft_f64.
inline void bluestein_f64(std::vector<std::complex<double>>& a, bool inverse) {
    const std::size_t n = a.size();
    std::size_t m = 1;
    while (m < 2 * n - 1) {
        m <<= 1;
    }
    std::vector<std::complex<double>> chirp(n);
    for (std::size_t j = 0; j < n; ++j) {
        const auto square = static_cast<unsigned long long>(j) * j % (2 * n); // exact angle reduction
        const double angle = std::numbers::pi * static_cast<double>(square) / static_cast<double>(n);
        chirp[j] = std::polar(1.0, inverse ? angle : -angle);
    }
    std::vector<std::complex<double>> u(m), v(m);
    for (std::size_t j = 0; j < n; ++j) {
        u[j] = a[j] * chirp[j];
        v[j] = std::conj(chirp[j]);
        if (j > 0) {
            v[m - j] = v[j];
        }
    }
    fft_f64(u, false);
    fft_f64(v, false);
    for (std::size_t i = 0; i < m; ++i) {
        u[i] *= v[i];
    }
    fft_f64(u, true);
    for (std::size_t k = 0; k < n; ++k) {
        a[k] = chirp[k] * u[k] / static_cast<double>(m);
    }
}

} // namespace detail

inline void dft_f64(std::vector<std::complex<double>>& a, bool inverse) {
    if (a.size() <= 1) {
        return;
    }
    if (is_power_of_two(static_cast<long long>(a.size()))) {
        fft_f64(a, inverse);
    } else {
        detail::bluestein_f64(a, inverse);
    }
}

inline void fft_axis_f64(std::vector<std::complex<double>>& data, const FftAxis& axis, bool inverse,
                         double scale) {
    transform_axis_lines_f64(data, axis, scale, "fft_axis_f64",
                             [inverse](std::vector<std::complex<double>>& line) { dft_f64(line, inverse); });
}

inline std::vector<double> interleaved(const std::vector<std::complex<double>>& values) {
    std::vector<double> out(2 * values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        out[2 * i] = values[i].real();
        out[2 * i + 1] = values[i].imag();
    }
    return out;
}

inline std::vector<std::complex<double>> from_interleaved(const std::vector<double>& values) {
    std::vector<std::complex<double>> out(values.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = {values[2 * i], values[2 * i + 1]};
    }
    return out;
}

// Each part rounded to fp32, as a complex64 tensor stores it (real then imaginary).
inline std::complex<double> round_to_complex64(std::complex<double> value) {
    return {round_to(DType::F32, value.real()), round_to(DType::F32, value.imag())};
}

inline void store_complex64(const TensorView& out, const std::vector<std::complex<double>>& values) {
    if (out.dtype != DType::C64 || static_cast<long long>(values.size()) != out.numel()) {
        throw std::invalid_argument("store_complex64: the output is not complex64 of values.size() elements");
    }
    auto* parts = static_cast<float*>(out.data);
    for (std::size_t i = 0; i < values.size(); ++i) {
        parts[2 * i] = static_cast<float>(values[i].real());
        parts[2 * i + 1] = static_cast<float>(values[i].imag());
    }
}

} // namespace pkbw::tk
