// Planned float64 DFTs for host code that transforms many lines of one length (60's input spectrum,
// 720 x 1440 per field at PKB's shape, and its oracle): the same arithmetic as fft_axis_host.h's dft_f64
// (radix 2, or Bluestein over a power-of-two FFT), with the work that depends on the length alone done
// once instead of per line.
//
//   DftPlanF64 plan(n)                 twiddles and bit reversal of the power-of-two length m (m = n,
//                                      or Bluestein's m >= 2n - 1), and for Bluestein the chirp and the
//                                      FFT of its kernel (with the inverse's 1/m folded in: exact, m is a
//                                      power of two)
//   plan.transform(a, inverse)         in-place DFT of a[0..n), unscaled both ways (as dft_f64); not
//                                      thread-safe (one scratch line per plan)
//   planned_fft_axis_f64(data, axis, inverse, scale)
//                                      fft_axis_f64 with one plan for every line
//
// dft_f64 computes each twiddle with std::polar on every call (n/2 sines and cosines per radix-2 pass,
// three passes per Bluestein line): for 60's spectrum that was about 15 times the butterflies' cost.
// Products are written out (re·re - im·im, re·im + im·re): std::complex's operator* adds a NaN check
// per product that the finite values here never need.
#pragma once

#include "pkbw/toolkit/fft_axis.h"

#include <algorithm>
#include <complex>
#include <cstddef>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

namespace pkbw::tk {

class DftPlanF64 {
public:
    explicit DftPlanF64(std::size_t n)
        : n_(n) {
        std::size_t m = 1;
        while (m < n) {
            m <<= 1;
        }
        if (m != n) {
            while (m < 2 * n - 1) {
                m <<= 1;
            }
        }
        m_ = m;
        make_radix2();
        if (m_ != n_) {
            make_bluestein();
        }
    }

    std::size_t size() const { return n_; }

    void transform(std::complex<double>* a, bool inverse) {
        if (n_ <= 1) {
            return;
        }
        if (m_ == n_) {
            radix2(a, inverse);
            return;
        }
        // X_k = w_k Σ_j (x_j w_j) conj(w_{k-j}), w_j = exp(∓iπ j²/n); the inverse's chirp is conj(w).
        for (std::size_t j = 0; j < n_; ++j) {
            work_[j] = mul(a[j], oriented(chirp_[j], inverse));
        }
        std::fill(work_.begin() + static_cast<std::ptrdiff_t>(n_), work_.end(), std::complex<double>{});
        radix2(work_.data(), false);
        const std::vector<std::complex<double>>& kernel = inverse ? kernel_inverse_ : kernel_forward_;
        for (std::size_t i = 0; i < m_; ++i) {
            work_[i] = mul(work_[i], kernel[i]);
        }
        radix2(work_.data(), true);
        for (std::size_t k = 0; k < n_; ++k) {
            a[k] = mul(oriented(chirp_[k], inverse), work_[k]);
        }
    }

private:
    static std::complex<double> mul(std::complex<double> a, std::complex<double> b) {
        return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
    }
    static std::complex<double> oriented(std::complex<double> forward, bool inverse) {
        return inverse ? std::conj(forward) : forward;
    }

    // The forward twiddles exp(-2πi k/m) (the inverse's are their conjugates: cos and sin of a negated
    // angle are exact negations) and the bit-reversal permutation.
    void make_radix2() {
        twiddle_.resize(m_ / 2);
        for (std::size_t k = 0; k < m_ / 2; ++k) {
            twiddle_[k] =
                std::polar(1.0, -2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(m_));
        }
        reversed_.assign(m_, 0);
        for (std::size_t i = 1, j = 0; i < m_; ++i) {
            std::size_t bit = m_ >> 1;
            for (; j & bit; bit >>= 1) {
                j ^= bit;
            }
            j ^= bit;
            reversed_[i] = j;
        }
    }

    // The forward chirp w_j (its angle reduced mod 2n exactly, as dft_f64) and both directions' kernel
    // spectra, FFT(conj(w) circularly extended) / m.
    void make_bluestein() {
        chirp_.resize(n_);
        for (std::size_t j = 0; j < n_; ++j) {
            const auto square = static_cast<unsigned long long>(j) * j % (2 * n_);
            chirp_[j] =
                std::polar(1.0, -std::numbers::pi * static_cast<double>(square) / static_cast<double>(n_));
        }
        const auto kernel_of = [&](bool inverse) {
            std::vector<std::complex<double>> kernel(m_);
            for (std::size_t j = 0; j < n_; ++j) {
                kernel[j] = std::conj(oriented(chirp_[j], inverse)) / static_cast<double>(m_);
                if (j > 0) {
                    kernel[m_ - j] = kernel[j];
                }
            }
            radix2(kernel.data(), false);
            return kernel;
        };
        kernel_forward_ = kernel_of(false);
        kernel_inverse_ = kernel_of(true);
        work_.resize(m_);
    }

    void radix2(std::complex<double>* a, bool inverse) const {
        for (std::size_t i = 1; i < m_; ++i) {
            if (i < reversed_[i]) {
                std::swap(a[i], a[reversed_[i]]);
            }
        }
        for (std::size_t len = 2; len <= m_; len <<= 1) {
            const std::size_t half = len / 2, step = m_ / len;
            for (std::size_t i = 0; i < m_; i += len) {
                for (std::size_t k = 0; k < half; ++k) {
                    const std::complex<double> even = a[i + k],
                                               odd = mul(a[i + k + half],
                                                         oriented(twiddle_[k * step], inverse));
                    a[i + k] = even + odd;
                    a[i + k + half] = even - odd;
                }
            }
        }
    }

    std::size_t n_ = 0, m_ = 0;
    std::vector<std::complex<double>> twiddle_, chirp_, kernel_forward_, kernel_inverse_, work_;
    std::vector<std::size_t> reversed_;
};

// Applies `transform(line)` to every line of `axis` in `data` (gathered into `line`, written back times
// `scale`); `who` names the caller in the size error. The loop of fft_axis_f64 and planned_fft_axis_f64.
template <class Transform>
void transform_axis_lines_f64(std::vector<std::complex<double>>& data, const FftAxis& axis, double scale,
                              const char* who, Transform&& transform) {
    if (static_cast<long long>(data.size()) != axis.count()) {
        throw std::invalid_argument(std::string(who) + ": the data does not have outer * n * inner values");
    }
    std::vector<std::complex<double>> line(static_cast<std::size_t>(axis.n));
    for (long long o = 0; o < axis.outer; ++o) {
        for (long long i = 0; i < axis.inner; ++i) {
            const long long first = o * axis.n * axis.inner + i;
            for (long long k = 0; k < axis.n; ++k) {
                line[static_cast<std::size_t>(k)] = data[static_cast<std::size_t>(first + k * axis.inner)];
            }
            transform(line);
            for (long long k = 0; k < axis.n; ++k) {
                data[static_cast<std::size_t>(first + k * axis.inner)] =
                    line[static_cast<std::size_t>(k)] * scale;
            }
        }
    }
}

inline void planned_fft_axis_f64(std::vector<std::complex<double>>& data, const FftAxis& axis, bool inverse,
                                 double scale) {
    DftPlanF64 plan(static_cast<std::size_t>(axis.n));
    transform_axis_lines_f64(
        data, axis, scale, "planned_fft_axis_f64",
        [&](std::vector<std::complex<double>>& line) { plan.transform(line.data(), inverse); });
}

} // namespace pkbw::tk
