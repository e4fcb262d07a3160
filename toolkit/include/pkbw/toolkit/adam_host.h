// Host-oracle equivalent of adam.cuh (pkbw reference toolkit): the same op sequence in double with a
// rounding to the dtype after every torch op. Vectors may alias (in == out).
#pragma once

#include "pkbw/toolkit/adam_rule.h"
#include "pkbw/toolkit/host.h"

#include <cmath>
#include <vector>

namespace pkbw::tk {

inline void adam_update_f64(DType dtype, const std::vector<double>& grad, std::vector<double>& w,
                            std::vector<double>& m, std::vector<double>& v, const AdamHyper& h) {
    auto r = [dtype](double x) { return round_to(dtype, x); };
    const double bc1 = h.bc1(), bc2 = h.bc2();
    for (std::size_t i = 0; i < grad.size(); ++i) {
        const double g = grad[i];
        m[i] = r(r(m[i] * h.beta1) + (1.0 - h.beta1) * g);
        v[i] = r(r(v[i] * h.beta2) + (1.0 - h.beta2) * g * g);
        const double denom = r(r(std::sqrt(r(v[i] / bc2))) + h.eps);
        const double q = r(r(m[i] / bc1) / denom);
        if (h.rule == AdamRule::DecoupledDecay)
            w[i] = r(r(w[i] + q * -h.lr) + w[i] * (-h.lr * h.weight_decay));
        else
            w[i] = r(w[i] + r(q * -h.lr));
    }
}

} // namespace pkbw::tk
