// Float64 twin of delta_rule.cuh for the host oracles (PKB 74, 75): the same recurrence in double on
// one head's sequences (q, k normalised and scaled by the caller). Returns o [T, dv], unrounded.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace pkbw::tk {

// out[0..n) = x / max(‖x‖₂, eps) · scale (F.normalize, then the q scale).
inline void normalized_f64(const double* x, long long n, double scale, double eps, double* out) {
    double ss = 0;
    for (long long e = 0; e < n; ++e)
        ss += x[e] * x[e];
    const double norm = std::max(std::sqrt(ss), eps);
    for (long long e = 0; e < n; ++e)
        out[e] = x[e] / norm * scale;
}

// q, k, decay: [T, dk]; v: [T, dv]; beta: [T].
inline std::vector<double> delta_rule_f64(long long steps, long long dk, long long dv,
                                          const std::vector<double>& q, const std::vector<double>& k,
                                          const std::vector<double>& v, const std::vector<double>& decay,
                                          const std::vector<double>& beta) {
    std::vector<double> s(static_cast<std::size_t>(dk * dv), 0.0), out(static_cast<std::size_t>(steps * dv));
    std::vector<double> u(static_cast<std::size_t>(dv));
    for (long long t = 0; t < steps; ++t) {
        for (long long i = 0; i < dk; ++i)
            for (long long j = 0; j < dv; ++j)
                s[i * dv + j] *= decay[t * dk + i];
        for (long long j = 0; j < dv; ++j) {
            double proj = 0;
            for (long long i = 0; i < dk; ++i)
                proj += k[t * dk + i] * s[i * dv + j];
            u[j] = (v[t * dv + j] - proj) * beta[t];
        }
        for (long long i = 0; i < dk; ++i)
            for (long long j = 0; j < dv; ++j)
                s[i * dv + j] += k[t * dk + i] * u[j];
        for (long long j = 0; j < dv; ++j) {
            double o = 0;
            for (long long i = 0; i < dk; ++i)
                o += q[t * dk + i] * s[i * dv + j];
            out[t * dv + j] = o;
        }
    }
    return out;
}

} // namespace pkbw::tk
