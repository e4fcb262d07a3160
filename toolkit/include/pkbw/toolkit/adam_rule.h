// Adam/AdamW hyper-parameters as PKB's training-step problems (40-43, 47) pass them, shared by the
// CUDA kernel (adam.cuh) and its host-oracle equivalent (adam_host.h). Host and device code.
#pragma once

#include "pkbw/solution.h"

#include <cmath>

namespace pkbw::tk {

// Which of PKB's two update spellings a problem uses; each torch op rounds to the dtype.
enum class AdamRule {
    // 40-43: w.add_(m_hat.div(denom).mul(-lr)): the quotient and the scaled step are each rounded,
    // then added.
    ScaledStep,
    // 47 (AdamW, decoupled decay): theta.add_(m_hat.div(denom), alpha=-lr), then
    // theta.add_(theta_old, alpha=-lr·weight_decay); each add_ rounds once.
    DecoupledDecay,
};

struct AdamHyper {
    AdamRule rule = AdamRule::ScaledStep;
    double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
    double step = 1;
    double bc1() const { return 1.0 - std::pow(beta1, step); }
    double bc2() const { return 1.0 - std::pow(beta2, step); }
};

// The hyper-parameters from the problem's params (lr, beta1, beta2, eps, weight_decay, step), with
// PKB's values as fallbacks.
inline AdamHyper adam_hyper(const Context& ctx, AdamRule rule) {
    AdamHyper h;
    h.rule = rule;
    h.lr = ctx.param("lr", 1e-3);
    h.beta1 = ctx.param("beta1", 0.9);
    h.beta2 = ctx.param("beta2", 0.999);
    h.eps = ctx.param("eps", 1e-8);
    h.weight_decay = ctx.param("weight_decay", 0.0);
    h.step = ctx.param("step", 1);
    return h;
}

} // namespace pkbw::tk
