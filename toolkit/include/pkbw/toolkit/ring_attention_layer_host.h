// Float64 twin of ring_attention_layer.cuh for the host oracles (PKB 55, 56): qkv and the context
// rounded to the dtype as PyTorch stores them, the ring attention in double (ring_attention_host.h);
// the returned output projection is unrounded (the caller rounds it, or sums it over TP first).
#pragma once

#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/permute_host.h"
#include "pkbw/toolkit/ring_attention_host.h"

#include <cmath>
#include <vector>

namespace pkbw::tk {

inline std::vector<double> ring_attention_layer_f64(const Context& ctx, const SubComm& cp,
                                                    const AttentionLayerDims& dims, DType dt,
                                                    const std::vector<double>& hidden,
                                                    const std::vector<double>& w_qkv,
                                                    const std::vector<double>& w_o) {
    const long long rows = dims.rows(), width = dims.width();
    const std::vector<double> qkv =
        gemm_rounded(hidden, w_qkv, rows, 3 * width, dims.hidden, dt, false, true);
    const long long shape[] = {rows, 3, width};
    const int to_split[] = {1, 0, 2};
    const std::vector<double> split = permuted(qkv, 3, shape, to_split);
    const std::size_t n = static_cast<std::size_t>(rows * width);
    const std::vector<double> q(split.begin(), split.begin() + n),
        k(split.begin() + n, split.begin() + 2 * n), v(split.begin() + 2 * n, split.end());
    const AttnShape sh =
        bshd_shape(dims.batch, dims.seq, dims.heads, dims.head_dim,
                   static_cast<float>(1.0 / std::sqrt(static_cast<double>(dims.head_dim))), dims.causal);
    std::vector<double> context = ring_attention_forward_f64(ctx, cp, sh, q, k, v);
    round_all(dt, context);
    return gemm_f64(context, w_o, rows, dims.hidden, width, false, true);
}

} // namespace pkbw::tk
