// Host-oracle equivalent of mlp.cuh (pkbw reference toolkit): the tiny MLP's MSE gradient with
// respect to the flat parameters, in double with torch's roundings to the dtype at the same places.
#pragma once

#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/mlp_shape.h"

#include <vector>

namespace pkbw::tk {

// The four parameters of the flat vector (pack/unpack: mlp_shape.h's offsets), as copies.
inline std::vector<double> mlp_part(const std::vector<double>& flat, const MlpShape& s, int k) {
    const auto begin = flat.begin() + s.offset(k);
    return std::vector<double>(begin, begin + s.count(k));
}

// Inputs first..first+3 (W1, b1, W2, b2) packed into the flat vector, as double.
inline std::vector<double> mlp_pack_inputs_f64(const Context& ctx, int first) {
    std::vector<double> flat;
    for (int k = 0; k < 4; ++k) {
        const std::vector<double> part = to_f64(ctx.input(first + k));
        flat.insert(flat.end(), part.begin(), part.end());
    }
    return flat;
}

// Unpacks the flat vector into outputs first..first+3 (rounded to their dtype).
inline void mlp_store_unpacked(const Context& ctx, const MlpShape& s, const std::vector<double>& flat,
                               int first) {
    for (int k = 0; k < 4; ++k)
        store_all(ctx.output(first + k), mlp_part(flat, s, k));
}

// x [rows, d_in], y [rows, d_out] and flat_params as double; returns the flat gradient (rounded).
inline std::vector<double> mlp_mse_gradient_f64(DType dtype, const MlpShape& s,
                                                const std::vector<double>& flat_params,
                                                const std::vector<double>& x, const std::vector<double>& y) {
    const std::vector<double> w1 = mlp_part(flat_params, s, 0), b1 = mlp_part(flat_params, s, 1);
    const std::vector<double> w2 = mlp_part(flat_params, s, 2), b2 = mlp_part(flat_params, s, 3);
    std::vector<double> h = gemm_rounded(x, w1, s.rows, s.hidden, s.d_in, dtype, false, true, b1);
    for (double& v : h)
        v = v > 0 ? v : 0.0;
    const std::vector<double> out = gemm_rounded(h, w2, s.rows, s.d_out, s.hidden, dtype, false, true, b2);
    const double alpha = round_to(dtype, 2.0 / static_cast<double>(out.size()));
    std::vector<double> d_o(out.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        d_o[i] = round_to(dtype, alpha * round_to(dtype, out[i] - y[i]));
    const std::vector<double> gw2 = gemm_rounded(d_o, h, s.d_out, s.hidden, s.rows, dtype, true, false);
    std::vector<double> gb2 = column_sums_f64(d_o, s.rows, s.d_out);
    round_all(dtype, gb2);
    std::vector<double> d_h = gemm_rounded(d_o, w2, s.rows, s.hidden, s.d_out, dtype);
    for (std::size_t i = 0; i < d_h.size(); ++i)
        if (!(h[i] > 0))
            d_h[i] = 0.0;
    const std::vector<double> gw1 = gemm_rounded(d_h, x, s.hidden, s.d_in, s.rows, dtype, true, false);
    std::vector<double> gb1 = column_sums_f64(d_h, s.rows, s.hidden);
    round_all(dtype, gb1);
    std::vector<double> grad;
    grad.reserve(static_cast<std::size_t>(s.numel()));
    const std::vector<double>* parts[4] = {&gw1, &gb1, &gw2, &gb2};
    for (const std::vector<double>* part : parts)
        grad.insert(grad.end(), part->begin(), part->end());
    return grad;
}

} // namespace pkbw::tk
