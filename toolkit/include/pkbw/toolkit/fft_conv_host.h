// Float64 twin of fft_conv.cuh for host oracles (72; fft_f64 for 59 and 60's oracles too).
//
//   fft_f64(a, inverse)              in-place complex DFT of a power-of-two length (radix 2), unscaled
//                                    both ways (as cuFFT)
//   long_convolution_f64(c, u, h)    y[ch, t] = Σ_s u[ch, s] · h[ch, (t - s) mod n], t < length, in
//                                    double: by FFT when n is a power of two, else the direct sum
//
// The oracle's convolution is the exact circular one PKB's irfft(rfft·rfft) computes; an fp32 FFT's
// rounding (the reference's, PKB's) is what the comparison tolerates.
#pragma once

#include "pkbw/toolkit/host.h"

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

namespace pkbw::tk {

inline bool is_power_of_two(long long n) {
    return n > 0 && (n & (n - 1)) == 0;
}

inline void fft_f64(std::vector<std::complex<double>>& a, bool inverse) {
    const std::size_t n = a.size();
    for (std::size_t i = 1, j = 0; i < n; ++i) { // bit reversal
        std::size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) {
            j ^= bit;
        }
        j ^= bit;
        if (i < j) {
            std::swap(a[i], a[j]);
        }
    }
    // Each twiddle from its own angle (not by repeated products), so its error stays one rounding.
    std::vector<std::complex<double>> twiddle(n / 2);
    for (std::size_t k = 0; k < n / 2; ++k) {
        twiddle[k] = std::polar(1.0, 2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n) *
                                         (inverse ? 1 : -1));
    }
    for (std::size_t len = 2; len <= n; len <<= 1) {
        const std::size_t step = n / len;
        for (std::size_t i = 0; i < n; i += len) {
            for (std::size_t k = 0; k < len / 2; ++k) {
                const std::complex<double> even = a[i + k], odd = a[i + k + len / 2] * twiddle[k * step];
                a[i + k] = even + odd;
                a[i + k + len / 2] = even - odd;
            }
        }
    }
}

struct LongConvF64 {
    long long channels = 0, length = 0, filter_len = 0, fft_size = 0;
};

// u [channels, length], h [channels, filter_len] (h truncated to fft_size); returns y [channels, length].
inline std::vector<double> long_convolution_f64(const LongConvF64& c, const std::vector<double>& u,
                                                const std::vector<double>& h) {
    const long long n = c.fft_size, taps = std::min(c.filter_len, n);
    std::vector<double> y(static_cast<std::size_t>(c.channels * c.length), 0.0);
    for (long long ch = 0; ch < c.channels; ++ch) {
        const double* us = &u[static_cast<std::size_t>(ch * c.length)];
        const double* hs = &h[static_cast<std::size_t>(ch * c.filter_len)];
        double* ys = &y[static_cast<std::size_t>(ch * c.length)];
        if (!is_power_of_two(n)) {
            for (long long t = 0; t < c.length; ++t) {
                double sum = 0;
                for (long long s = 0; s < c.length; ++s) {
                    const long long k = ((t - s) % n + n) % n;
                    sum += k < taps ? us[s] * hs[k] : 0.0;
                }
                ys[t] = sum;
            }
            continue;
        }
        std::vector<std::complex<double>> uf(static_cast<std::size_t>(n)), hf(static_cast<std::size_t>(n));
        for (long long t = 0; t < c.length; ++t) {
            uf[static_cast<std::size_t>(t)] = us[t];
        }
        for (long long t = 0; t < taps; ++t) {
            hf[static_cast<std::size_t>(t)] = hs[t];
        }
        fft_f64(uf, false);
        fft_f64(hf, false);
        for (long long i = 0; i < n; ++i) {
            uf[static_cast<std::size_t>(i)] *= hf[static_cast<std::size_t>(i)];
        }
        fft_f64(uf, true);
        for (long long t = 0; t < c.length; ++t) {
            ys[t] = uf[static_cast<std::size_t>(t)].real() / static_cast<double>(n);
        }
    }
    return y;
}

} // namespace pkbw::tk
