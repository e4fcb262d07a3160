// Float64 twins of attention.cuh for the host oracles (PKB 39, 54-57). Operands are whole tensors as
// double with attention.h's views; results are written at the same views into vectors the caller
// sized. Nothing is rounded unless `round` names a dtype (39's per-op rounding).
#pragma once

#include "pkbw/toolkit/attention.h"
#include "pkbw/toolkit/host.h"

#include <cmath>
#include <optional>
#include <vector>

namespace pkbw::tk {

struct AttnInputsF64 {
    const std::vector<double>& q;
    const std::vector<double>& k;
    const std::vector<double>& v;
    AttnView qv, kv, vv;
};

namespace attn_host_detail {

inline double dot(const double* a, const double* b, long long n) {
    double s = 0;
    for (long long d = 0; d < n; ++d)
        s += a[d] * b[d];
    return s;
}

// Softmax of query row i's scores into p; returns the log-sum-exp.
inline double softmax_row(const AttnShape& sh, const AttnInputsF64& in, long long z0, long long z1,
                          long long i, std::optional<DType> round, std::vector<double>& p) {
    p.assign(static_cast<std::size_t>(sh.k_rows), -INFINITY);
    double m = -INFINITY;
    for (long long j = 0; j < sh.k_rows; ++j) {
        if (sh.masked(i, j))
            continue;
        double s = dot(&in.q[in.qv.at(z0, z1, i)], &in.k[in.kv.at(z0, z1, j)], sh.dim);
        s = round ? round_to(*round, round_to(*round, s) * sh.scale) : s * sh.scale;
        p[j] = s;
        m = std::max(m, s);
    }
    double sum = 0;
    for (double s : p)
        sum += std::exp(s - m);
    for (double& s : p)
        s = round ? round_to(*round, std::exp(s - m) / sum) : std::exp(s - m) / sum;
    return m + std::log(sum);
}

} // namespace attn_host_detail

// softmax(q kᵀ·scale)·v of every query row into out (at `ov`) and its log-sum-exp into lse (lse_index;
// pass null to skip). With `round`, scores, probabilities and outputs are rounded as 39's eager ops.
inline void attention_f64(const AttnShape& sh, const AttnInputsF64& in, std::vector<double>& out,
                          const AttnView& ov, std::vector<double>* lse, std::optional<DType> round = {}) {
    std::vector<double> p;
    for (long long z0 = 0; z0 < sh.z0; ++z0)
        for (long long z1 = 0; z1 < sh.z1; ++z1)
            for (long long i = 0; i < sh.q_rows; ++i) {
                const double row_lse = attn_host_detail::softmax_row(sh, in, z0, z1, i, round, p);
                if (lse)
                    (*lse)[sh.lse_index(z0, z1, i)] = row_lse;
                for (long long d = 0; d < sh.dim; ++d) {
                    double o = 0;
                    for (long long j = 0; j < sh.k_rows; ++j)
                        o += p[j] * in.v[in.vv.at(z0, z1, j) + d];
                    out[ov.at(z0, z1, i) + d] = round ? round_to(*round, o) : o;
                }
            }
}

// PKB's _merge_out_lse in double: out = out − σ(b_lse − lse)·(out − b_out), lse = lse − logσ(lse − b_lse),
// per query row (out at `ov`, lse at lse_index); `first` copies the block.
inline void merge_out_lse_f64(const AttnShape& sh, const AttnView& ov, std::vector<double>& out,
                              std::vector<double>& lse, const std::vector<double>& block_out,
                              const std::vector<double>& block_lse, bool first) {
    for (long long z0 = 0; z0 < sh.z0; ++z0)
        for (long long z1 = 0; z1 < sh.z1; ++z1)
            for (long long i = 0; i < sh.q_rows; ++i) {
                const long long li = sh.lse_index(z0, z1, i), at = ov.at(z0, z1, i);
                const double w = first ? 1.0 : 1.0 / (1.0 + std::exp(lse[li] - block_lse[li]));
                for (long long d = 0; d < sh.dim; ++d)
                    out[at + d] -= w * (out[at + d] - block_out[at + d]);
                const double x = lse[li] - block_lse[li];
                lse[li] = first ? block_lse[li]
                                : lse[li] - (std::min(x, 0.0) - std::log1p(std::exp(-std::fabs(x))));
            }
}

// 57's _local_attn_backward in double: p = exp(s − lse) with the given lse, dS = p·(dP − Σ dout·out);
// dq = scale·dS·k, dk = scale·dSᵀ·q, dv = pᵀ·dout, written at q's, k's and v's views (the block's
// contribution only: callers add blocks).
struct AttnGradsF64 {
    std::vector<double> dq, dk, dv;
};
inline AttnGradsF64 attention_backward_f64(const AttnShape& sh, const AttnInputsF64& in,
                                           const std::vector<double>& dout, const std::vector<double>& out,
                                           const std::vector<double>& lse) {
    using attn_host_detail::dot;
    AttnGradsF64 g{std::vector<double>(in.q.size(), 0.0), std::vector<double>(in.k.size(), 0.0),
                   std::vector<double>(in.v.size(), 0.0)};
    for (long long z0 = 0; z0 < sh.z0; ++z0)
        for (long long z1 = 0; z1 < sh.z1; ++z1)
            for (long long i = 0; i < sh.q_rows; ++i) {
                const long long qi = in.qv.at(z0, z1, i);
                const double rd = dot(&dout[qi], &out[qi], sh.dim);
                const double l = lse[sh.lse_index(z0, z1, i)];
                for (long long j = 0; j < sh.k_rows; ++j) {
                    if (sh.masked(i, j))
                        continue;
                    const long long kj = in.kv.at(z0, z1, j), vj = in.vv.at(z0, z1, j);
                    const double p = std::exp(dot(&in.q[qi], &in.k[kj], sh.dim) * sh.scale - l);
                    const double ds = p * (dot(&dout[qi], &in.v[vj], sh.dim) - rd);
                    for (long long d = 0; d < sh.dim; ++d) {
                        g.dq[qi + d] += sh.scale * ds * in.k[kj + d];
                        g.dk[kj + d] += sh.scale * ds * in.q[qi + d];
                        g.dv[vj + d] += p * dout[qi + d];
                    }
                }
            }
    return g;
}

} // namespace pkbw::tk
