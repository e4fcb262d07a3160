// The MoE expert MLP on the device for references (pkbw reference toolkit): moe_mlp.h's SiLU-GLU MLP
// with biases and optional LoRA, as three (or nine) tk::linear calls and two elementwise kernels with
// torch's roundings.
//
//     pkbw::tk::GluMlp mlp{hidden, 128};  mlp.gate_w = ...;  (moe_mlp.h)
//     PKBW_TRY(pkbw::tk::glu_mlp(ctx, dtype, mlp, x, rows, y));
//
// Scratch: "pkbw_tk_moe_mlp_gate", "..._up" (rows × inter), and with LoRA "..._lora_a" (rows × r) and
// "..._lora_out" (rows × max(inter, hidden)). x and y must not alias.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/moe_mlp.h"
#include "pkbw/toolkit/types.cuh"

namespace pkbw::tk {

namespace moe_mlp_detail {

// a = r(a + b): torch's `+` of two T tensors.
template <class T>
__global__ void add_in_place(T* a, const T* b, long long count) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP)
        a[i] = from_float<T>(to_float(a[i]) + to_float(b[i]));
}

// gate = r(r(silu(gate)) · up): F.silu stored in T, then the product stored in T.
template <class T>
__global__ void silu_times(T* gate, const T* up, long long count) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        const float g = to_float(gate[i]);
        const float s = round_as<T>(g / (1.f + expf(-g)));
        gate[i] = from_float<T>(s * to_float(up[i]));
    }
}

// out = r(F.linear(x, W, b) + F.linear(F.linear(x, A), B)) when A is set, else F.linear(x, W, b).
inline int projection(const Context& ctx, DType dtype, long long rows, long long in, long long out_features,
                      const void* x, const void* w, const void* b, int lora_rank, const void* lora_a,
                      const void* lora_b, void* out) {
    PKBW_TRY(linear(ctx, dtype, rows, in, out_features, x, w, b, out));
    if (lora_rank <= 0)
        return 0;
    if (!lora_a || !lora_b)
        return ctx.fail("glu_mlp: lora_rank > 0 needs both LoRA factors of every projection");
    const std::size_t es = element_size(dtype);
    void* xa = ctx.scratch("pkbw_tk_moe_mlp_lora_a", static_cast<std::size_t>(rows * lora_rank) * es);
    void* delta = ctx.scratch("pkbw_tk_moe_mlp_lora_out", static_cast<std::size_t>(rows * out_features) * es);
    PKBW_TRY(linear(ctx, dtype, rows, in, lora_rank, x, lora_a, nullptr, xa));
    PKBW_TRY(linear(ctx, dtype, rows, lora_rank, out_features, xa, lora_b, nullptr, delta));
    return dispatch_float(ctx, dtype, "glu_mlp", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const long long count = rows * out_features;
        add_in_place<T><<<grid_for(count), 256, 0, ctx.stream()>>>(static_cast<T*>(out),
                                                                   static_cast<const T*>(delta), count);
        return finish(ctx);
    });
}

} // namespace moe_mlp_detail

// y [rows, hidden] = the MLP of x [rows, hidden] (device, dtype). rows may be 0.
inline int glu_mlp(const Context& ctx, DType dtype, const GluMlp& m, const void* x, long long rows, void* y) {
    if (rows == 0)
        return 0;
    if (!m.gate_w || !m.up_w || !m.down_w || m.hidden < 1 || m.inter < 1)
        return ctx.fail("glu_mlp: gate, up and down weights and positive hidden/inter sizes are required");
    const std::size_t es = element_size(dtype);
    void* gate = ctx.scratch("pkbw_tk_moe_mlp_gate", static_cast<std::size_t>(rows * m.inter) * es);
    void* up = ctx.scratch("pkbw_tk_moe_mlp_up", static_cast<std::size_t>(rows * m.inter) * es);
    using moe_mlp_detail::projection;
    PKBW_TRY(projection(ctx, dtype, rows, m.hidden, m.inter, x, m.gate_w, m.gate_b, m.lora_rank,
                        m.lora_gate_a, m.lora_gate_b, gate));
    PKBW_TRY(projection(ctx, dtype, rows, m.hidden, m.inter, x, m.up_w, m.up_b, m.lora_rank, m.lora_up_a,
                        m.lora_up_b, up));
    PKBW_TRY(dispatch_float(ctx, dtype, "glu_mlp", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const long long count = rows * m.inter;
        moe_mlp_detail::silu_times<T><<<grid_for(count), 256, 0, ctx.stream()>>>(
            static_cast<T*>(gate), static_cast<const T*>(up), count);
        return finish(ctx);
    }));
    return projection(ctx, dtype, rows, m.inter, m.hidden, gate, m.down_w, m.down_b, m.lora_rank,
                      m.lora_down_a, m.lora_down_b, y);
}

} // namespace pkbw::tk
