// Batched 1-D complex FFTs along one axis (59, 60): the layout that the device functions
// (fft_axis.cuh) and their float64 twins (fft_axis_host.h) both take, and torch.fft's scale factors.
#pragma once

#include <cmath>

namespace pkbw::tk {

// A contiguous complex array viewed as [outer, n, inner]: one transform of length n along the middle
// axis for every (outer, inner) pair. Axis d of a [d0, ..., dk] array is outer = d0 ... d(d-1),
// n = dd, inner = d(d+1) ... dk.
struct FftAxis {
    long long outer = 1;
    long long n = 0;
    long long inner = 1;
    long long lines() const { return outer * inner; }
    long long count() const { return outer * n * inner; }
};

// torch.fft's norm argument: "backward" (the forward transform unscaled, the inverse by 1/n),
// "ortho" (1/sqrt(n) both ways) and "forward" (the forward by 1/n, the inverse unscaled).
enum class FftNorm { backward, ortho, forward };

// The factor torch multiplies a transform's output by (_fft_normalization_scale: computed in double;
// 1 means no multiplication at all).
inline double fft_scale(FftNorm norm, long long n, bool inverse) {
    const bool scaled = norm == FftNorm::ortho || (norm == FftNorm::backward) == inverse;
    if (!scaled) {
        return 1.0;
    }
    const double size = static_cast<double>(n);
    return norm == FftNorm::ortho ? 1.0 / std::sqrt(size) : 1.0 / size;
}

} // namespace pkbw::tk
