// Elementwise Adam/AdamW step for references (pkbw reference toolkit), with PKB's torch op sequence
// and a rounding to the dtype after every op, each op computed as PyTorch's CUDA kernel computes it
// in fp32 (scalars are the Python doubles cast to fp32 once, as the kernels take them):
//
//     m = r(fma(g, a1, r(m·β1)))         m.mul_(beta1).add_(g, alpha=1-beta1)     a1 = fp32(1 − β1)
//     v = r(fma(a2, g·g, r(v·β2)))       v.mul_(beta2).addcmul_(g, g, value=1-beta2)  a2 = fp32(1 − β2)
//     d = r(r(sqrt(r(v·(1/bc2)))) + eps) (v / bc2).sqrt().add(eps)
//     q = r(r(m·(1/bc1)) / d)            m_hat.div(denom)
//     ScaledStep:     w = r(w + r(q·(−lr)))
//     DecoupledDecay: w = r(fma(w_old, −lr·wd, r(fma(q, −lr, w))))
//
// Why each form: torch's add with alpha is `a + b·alpha` (one FMA), addcmul is
// `fma(alpha, t1·t2, self)` (DeviceAddCmulCdiv.cuh), and a tensor divided by a Python scalar is
// multiplied by the fp32 reciprocal of the scalar (div_true_kernel_cuda). The fp32 constants differ
// from the float subtraction 1.f − β: fp32(1 − 0.999) = 0.0010000000 but 1.f − 0.999f = 0.00099998713
// (1.3e-5 relative), which rounds v to another bf16 value in about 0.7% of the elements. The FMAs are
// written out (fmaf, __fmul_rn, __fdiv_rn) so that no compiler contraction changes them.
//
//     PKBW_TRY(pkbw::tk::adam_update(ctx, dtype, count, grad, w, m, v, w_out, m_out, v_out, hyper));
//
// Inputs and outputs may alias element for element (in == out updates in place). The host oracle's
// equivalent is adam_host.h (the same ops in double: PyTorch's CPU kernels, which divide).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/adam_rule.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

namespace pkbw::tk {
namespace detail {

struct AdamDevice {
    int decoupled;
    // fp32 scalars as torch's kernels receive them: one_minus_beta = fp32(1 − β), inv_bc = 1 / fp32(bc),
    // neg_lr = fp32(−lr), decay = fp32(−lr·wd).
    float beta1, beta2, one_minus_beta1, one_minus_beta2, inv_bc1, inv_bc2, eps, neg_lr, decay;
};

template <class T>
__global__ void adam_kernel(const T* g, const T* w, const T* m0, const T* v0, T* w_out, T* m_out, T* v_out,
                            long long count, AdamDevice a) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        const float gi = to_float(g[i]);
        const float w_old = to_float(w[i]);
        const float m =
            round_as<T>(fmaf(gi, a.one_minus_beta1, round_as<T>(__fmul_rn(to_float(m0[i]), a.beta1))));
        const float v = round_as<T>(
            fmaf(a.one_minus_beta2, __fmul_rn(gi, gi), round_as<T>(__fmul_rn(to_float(v0[i]), a.beta2))));
        const float v_hat = round_as<T>(__fmul_rn(v, a.inv_bc2));
        const float denom = round_as<T>(__fadd_rn(round_as<T>(sqrtf(v_hat)), a.eps));
        const float q = round_as<T>(__fdiv_rn(round_as<T>(__fmul_rn(m, a.inv_bc1)), denom));
        float w_new;
        if (a.decoupled)
            w_new = round_as<T>(fmaf(w_old, a.decay, round_as<T>(fmaf(q, a.neg_lr, w_old))));
        else
            w_new = round_as<T>(__fadd_rn(w_old, round_as<T>(__fmul_rn(q, a.neg_lr))));
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
    detail::AdamDevice a{};
    a.decoupled = h.rule == AdamRule::DecoupledDecay ? 1 : 0;
    a.beta1 = static_cast<float>(h.beta1);
    a.beta2 = static_cast<float>(h.beta2);
    a.one_minus_beta1 = static_cast<float>(1.0 - h.beta1);
    a.one_minus_beta2 = static_cast<float>(1.0 - h.beta2);
    a.inv_bc1 = 1.f / static_cast<float>(h.bc1());
    a.inv_bc2 = 1.f / static_cast<float>(h.bc2());
    a.eps = static_cast<float>(h.eps);
    a.neg_lr = static_cast<float>(-h.lr);
    a.decay = static_cast<float>(-h.lr * h.weight_decay);
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
