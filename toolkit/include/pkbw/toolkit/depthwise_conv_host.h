// Float64 twin of depthwise_conv.cuh for the host oracles: the same halo ‖ x convolution per row,
// unrounded (the caller rounds once).
#pragma once

#include <vector>

namespace pkbw::tk {

// x and y rows start at x_offset + row·row_stride; halo is [rows, taps − 1].
inline void depthwise_causal_conv_f64(long long rows, long long channels, long long length, long long taps,
                                      long long row_stride, const std::vector<double>& x, long long x_offset,
                                      const std::vector<double>& halo, const std::vector<double>& w,
                                      std::vector<double>& y) {
    const long long pad = taps - 1;
    for (long long row = 0; row < rows; ++row)
        for (long long t = 0; t < length; ++t) {
            double acc = 0;
            for (long long k = 0; k < taps; ++k) {
                const long long s = t + k;
                const double v = s < pad ? halo[row * pad + s] : x[x_offset + row * row_stride + s - pad];
                acc += w[(row % channels) * taps + k] * v;
            }
            y[x_offset + row * row_stride + t] = acc;
        }
}

} // namespace pkbw::tk
