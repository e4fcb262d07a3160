// Elementwise Adam/AdamW step for references (pkbw reference toolkit), with PKB's torch op sequence
// and a rounding to the dtype after every op (fp32 arithmetic in between, as torch's kernels):
//
//     m = r(r(m·β1) + (1−β1)·g)          m.mul_(beta1).add_(g, alpha=1-beta1)
//     v = r(r(v·β2) + (1−β2)·g·g)        v.mul_(beta2).addcmul_(g, g, value=1-beta2)
//     d = r(r(sqrt(r(v / bc2))) + eps)   (v / bc2).sqrt().add(eps)
//     q = r(r(m / bc1) / d)              m_hat.div(denom)
//     ScaledStep:     w = r(w + r(q·(−lr)))
//     DecoupledDecay: w = r(r(w + q·(−lr)) + w_old·(−lr·wd))
//
//     PKBW_TRY(pkbw::tk::adam_update(ctx, dtype, count, grad, w, m, v, w_out, m_out, v_out, hyper));
//
// Inputs and outputs may alias element for element (in == out updates in place). The host oracle's
// equivalent is adam_host.h.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/adam_rule.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

namespace pkbw::tk {
namespace detail {

struct AdamDevice {
    int decoupled;
    float lr, beta1, beta2, eps, bc1, bc2, decay; // decay = −lr·wd
};

template <class T>
__global__ void adam_kernel(const T* g, const T* w, const T* m0, const T* v0, T* w_out, T* m_out, T* v_out,
                            long long count, AdamDevice a) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        const float gi = to_float(g[i]);
        const float w_old = to_float(w[i]);
        const float m = round_as<T>(round_as<T>(to_float(m0[i]) * a.beta1) + (1.f - a.beta1) * gi);
        const float v = round_as<T>(round_as<T>(to_float(v0[i]) * a.beta2) + (1.f - a.beta2) * gi * gi);
        const float denom = round_as<T>(round_as<T>(sqrtf(round_as<T>(v / a.bc2))) + a.eps);
        const float q = round_as<T>(round_as<T>(m / a.bc1) / denom);
        float w_new;
        if (a.decoupled)
            w_new = round_as<T>(round_as<T>(w_old + q * -a.lr) + w_old * a.decay);
        else
            w_new = round_as<T>(w_old + round_as<T>(q * -a.lr));
        m_out[i] = from_float<T>(m);
        v_out[i] = from_float<T>(v);
        w_out[i] = from_float<T>(w_new);
    }
}

} // namespace detail

// One Adam step over `count` elements of dtype (bf16, f16, f32) on ctx.stream().
inline int adam_update(const Context& ctx, DType dtype, long long count, const void* grad, const void* w,
                       const void* m, const void* v, void* w_out, void* m_out, void* v_out,
                       const AdamHyper& h) {
    if (count == 0)
        return 0;
    const detail::AdamDevice a{h.rule == AdamRule::DecoupledDecay ? 1 : 0,
                               static_cast<float>(h.lr),
                               static_cast<float>(h.beta1),
                               static_cast<float>(h.beta2),
                               static_cast<float>(h.eps),
                               static_cast<float>(h.bc1()),
                               static_cast<float>(h.bc2()),
                               static_cast<float>(-h.lr * h.weight_decay)};
    return dispatch_float(ctx, dtype, "pkbw::tk::adam_update", [&](auto tag) {
        using T = typename decltype(tag)::type;
        detail::adam_kernel<T><<<grid_for(count), 256, 0, ctx.stream()>>>(
            static_cast<const T*>(grad), static_cast<const T*>(w), static_cast<const T*>(m),
            static_cast<const T*>(v), static_cast<T*>(w_out), static_cast<T*>(m_out), static_cast<T*>(v_out),
            count, a);
        PKBW_CHECK(ctx, cudaGetLastError());
        return 0;
    });
}

} // namespace pkbw::tk
