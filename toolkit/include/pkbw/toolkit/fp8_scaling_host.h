// Delayed-scaling e4m3 round trip for host oracles (pkbw reference toolkit; PKB 52, 53), the same
// arithmetic as fp8_scaling.cuh: absmax into the rolled bf16 history, scale = fp32(max(history)) *
// fp32(1/448), q = e4m3(fp32(x) / scale) (c10's rule), recon = q * scale in fp32, rounded to the
// dtype. fp32 throughout, not double: the e4m3 rounding of x / scale must see the same fp32 value
// torch's CUDA kernels compute, or a value next to a rounding boundary moves by a whole e4m3 step.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/fp8.h"
#include "pkbw/toolkit/host.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pkbw::tk {

struct Fp8RoundTrip {
    std::vector<double> recon;   // x's round trip, already rounded to x's dtype
    std::vector<double> history; // the updated history (bf16 values)
};

inline Fp8RoundTrip fp8_delayed_round_trip_host(const TensorView& x, const TensorView& history_in) {
    Fp8RoundTrip result;
    const std::vector<double> v = to_f64(x);
    float absmax = 0.f;
    for (const double d : v) {
        const float a = std::fabs(static_cast<float>(d));
        absmax = (a > absmax || a != a) ? a : absmax;
    }
    result.history = to_f64(history_in);
    std::rotate(result.history.begin(), result.history.begin() + 1, result.history.end());
    result.history.back() = round_to(DType::BF16, absmax);
    double largest = -INFINITY;
    for (const double h : result.history) {
        largest = (h > largest || h != h) ? h : largest;
    }
    const float scale = std::max(static_cast<float>(largest), 1e-12f) * (1.0f / 448.0f);
    result.recon.resize(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        const float q = e4m3_round_trip(static_cast<float>(v[i]) / scale);
        result.recon[i] = round_to(x.dtype, static_cast<double>(q * scale));
    }
    return result;
}

} // namespace pkbw::tk
