// Float64 twin of gqa_attention.cuh (77's oracle): exact scores, a max-shifted softmax and the weighted
// sum in double; the caller rounds once (PKB's SDPA stores its output in D once).
#pragma once

#include "pkbw/toolkit/gqa_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pkbw::tk {

// out (written at s.out's strides, heads x head_dim per row) from q, k, v at their strides.
inline void gqa_attention_f64(const GqaShape& s, const double* q, const double* k, const double* v,
                              double* out) {
    std::vector<double> scores(static_cast<std::size_t>(s.keys));
    for (long long i = 0; i < s.queries; ++i) {
        for (long long h = 0; h < s.q_heads; ++h) {
            const long long g = gqa_kv_head(s, h);
            const double* qi = q + i * s.q.row_stride + h * s.q.head_stride;
            double top = -INFINITY;
            for (long long j = 0; j < s.keys; ++j) {
                const double* kj = k + j * s.k.row_stride + g * s.k.head_stride;
                double dot = 0;
                for (long long e = 0; e < s.head_dim; ++e) {
                    dot += qi[e] * kj[e];
                }
                scores[static_cast<std::size_t>(j)] = dot * s.scale;
                top = std::max(top, dot * s.scale);
            }
            double total = 0;
            for (double& x : scores) {
                x = std::exp(x - top);
                total += x;
            }
            double* oi = out + i * s.out.row_stride + h * s.out.head_stride;
            std::fill(oi, oi + s.head_dim, 0.0);
            for (long long j = 0; j < s.keys; ++j) {
                const double* vj = v + j * s.v.row_stride + g * s.v.head_stride;
                const double p = scores[static_cast<std::size_t>(j)] / total;
                for (long long e = 0; e < s.head_dim; ++e) {
                    oi[e] += p * vj[e];
                }
            }
        }
    }
}

} // namespace pkbw::tk
