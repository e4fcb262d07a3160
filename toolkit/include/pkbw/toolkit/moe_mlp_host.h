// Host (float64) equivalent of moe_mlp.cuh: moe_mlp.h's SiLU-GLU MLP with biases and optional LoRA,
// every GEMM exact and rounded once to the dtype (bias included), every elementwise op rounded as torch
// stores it.
#pragma once

#include "pkbw/toolkit/host.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace pkbw::tk {

// The MLP's parameters as double (empty bias: none; lora_rank 0: no LoRA).
struct GluMlpHost {
    std::int64_t hidden = 0, inter = 0;
    int lora_rank = 0;
    std::vector<double> gate_w, gate_b, up_w, up_b, down_w, down_b;
    std::vector<double> lora_gate_a, lora_gate_b, lora_up_a, lora_up_b, lora_down_a, lora_down_b;
};

namespace moe_mlp_host_detail {

// r(F.linear(x, w, b) + F.linear(F.linear(x, a), b_lora)) (the LoRA term only when rank > 0).
inline std::vector<double> projection(DType d, const std::vector<double>& x, std::int64_t rows,
                                      std::int64_t in, std::int64_t out, const std::vector<double>& w,
                                      const std::vector<double>& b, int rank,
                                      const std::vector<double>& lora_a, const std::vector<double>& lora_b) {
    std::vector<double> y = gemm_rounded(x, w, rows, out, in, d, false, true, b);
    if (rank > 0) {
        const std::vector<double> xa = gemm_rounded(x, lora_a, rows, rank, in, d, false, true);
        const std::vector<double> delta = gemm_rounded(xa, lora_b, rows, out, rank, d, false, true);
        for (std::size_t i = 0; i < y.size(); ++i)
            y[i] = round_to(d, y[i] + delta[i]);
    }
    return y;
}

} // namespace moe_mlp_host_detail

// y [rows, hidden] for x [rows, hidden].
inline std::vector<double> glu_mlp_f64(DType d, const GluMlpHost& m, const std::vector<double>& x,
                                       std::int64_t rows) {
    if (rows == 0)
        return {};
    using moe_mlp_host_detail::projection;
    std::vector<double> gate = projection(d, x, rows, m.hidden, m.inter, m.gate_w, m.gate_b, m.lora_rank,
                                          m.lora_gate_a, m.lora_gate_b);
    const std::vector<double> up =
        projection(d, x, rows, m.hidden, m.inter, m.up_w, m.up_b, m.lora_rank, m.lora_up_a, m.lora_up_b);
    for (std::size_t i = 0; i < gate.size(); ++i) {
        const double g = gate[i];
        gate[i] = round_to(d, round_to(d, g / (1.0 + std::exp(-g))) * up[i]);
    }
    return projection(d, gate, rows, m.inter, m.hidden, m.down_w, m.down_b, m.lora_rank, m.lora_down_a,
                      m.lora_down_b);
}

} // namespace pkbw::tk
