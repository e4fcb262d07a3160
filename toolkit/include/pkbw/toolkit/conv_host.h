// Float64 twin of conv_im2col.cuh for the host oracles: the convolution as its direct sum
// y[b, oc, o] = Σ_c Σ_taps w[oc, c, taps] · x[b, c, o · stride - pad + tap · dilation] (zeros outside),
// unrounded and without bias (the caller rounds and adds the bias as torch does). It shares only
// ConvGeometry's index map with the device, not the im2col matrix.
#pragma once

#include "pkbw/toolkit/conv_geometry.h"

#include <vector>

namespace pkbw::tk {

// x [batch, channels, in...], w [out_channels, channels, kernel...]; returns y [batch, out_channels, out...].
inline std::vector<double> conv_f64(const ConvGeometry& g, long long batch, const std::vector<double>& x,
                                    const std::vector<double>& w) {
    const long long positions = g.out_positions(), rows = g.col_rows();
    std::vector<double> y(static_cast<std::size_t>(batch * g.out_channels * positions), 0.0);
    std::vector<long long> source(static_cast<std::size_t>(positions));
    for (long long row = 0; row < rows; ++row) {
        for (long long p = 0; p < positions; ++p)
            source[p] = g.source(row, p);
        for (long long b = 0; b < batch; ++b) {
            const double* image = x.data() + b * g.channels * g.in_positions();
            for (long long oc = 0; oc < g.out_channels; ++oc) {
                const double weight = w[oc * rows + row];
                double* out = y.data() + (b * g.out_channels + oc) * positions;
                for (long long p = 0; p < positions; ++p)
                    if (source[p] >= 0)
                        out[p] += weight * image[source[p]];
            }
        }
    }
    return y;
}

} // namespace pkbw::tk
