// Float64 twins of ring_attention.cuh for the host oracles (PKB 54-57): the group's blocks gathered
// with ctx.all_gather_host, the ring's block schedule replayed. Results are unrounded.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/attention_host.h"
#include "pkbw/toolkit/host.h"

#include <vector>

namespace pkbw::tk {

// Block `j` of `count` values of a gathered stack.
inline std::vector<double> stack_block(const std::vector<double>& all, int j, std::size_t count) {
    return std::vector<double>(all.begin() + j * count, all.begin() + (j + 1) * count);
}

// Whether query rank i sees key block j of an n-rank ring (causal: the ring step (i − j) mod n ≤ i,
// i.e. j ≤ i), and whether that block is masked (the diagonal).
inline bool ring_block_used(bool causal, int i, int j, int n) {
    return !causal || (i - j + n) % n <= i;
}

// This rank's output of the ring forward: blocks merged in the ring's order (PKB's sigmoid form).
inline std::vector<double> ring_attention_forward_f64(const Context& ctx, const SubComm& cp,
                                                      const AttnShape& sh, const std::vector<double>& q,
                                                      const std::vector<double>& k,
                                                      const std::vector<double>& v) {
    const std::vector<double> ks = all_gather_f64(ctx, cp, k), vs = all_gather_f64(ctx, cp, v);
    const AttnView view = bshd_view(sh.q_rows, sh.z1, sh.dim);
    std::vector<double> out(q.size(), 0.0), lse(static_cast<std::size_t>(sh.problems() * sh.q_rows), 0.0);
    std::vector<double> block_out(q.size()), block_lse(lse.size());
    for (int step = 0; step < cp.size; ++step) {
        const int j = (cp.rank - step + cp.size) % cp.size;
        if (!ring_block_used(sh.causal, cp.rank, j, cp.size))
            continue;
        AttnShape block = sh;
        block.causal = sh.causal && step == 0;
        const std::vector<double> kj = stack_block(ks, j, k.size()), vj = stack_block(vs, j, v.size());
        attention_f64(block, {q, kj, vj, view, view, view}, block_out, view, &block_lse);
        merge_out_lse_f64(sh, view, out, lse, block_out, block_lse, step == 0);
    }
    return out;
}

// This rank's (dq, dk, dv) of the ring backward: dq over the key blocks it sees, dk/dv over the query
// ranks that see its block, with each query rank's own out and lse.
inline AttnGradsF64 ring_attention_backward_f64(const Context& ctx, const SubComm& cp, const AttnShape& sh,
                                                const std::vector<double>& dout, const std::vector<double>& q,
                                                const std::vector<double>& k, const std::vector<double>& v,
                                                const std::vector<double>& out,
                                                const std::vector<double>& lse) {
    const std::size_t n = q.size(), nl = lse.size();
    const std::vector<double> qs = all_gather_f64(ctx, cp, q), ks = all_gather_f64(ctx, cp, k);
    const std::vector<double> vs = all_gather_f64(ctx, cp, v), ds = all_gather_f64(ctx, cp, dout);
    const std::vector<double> os = all_gather_f64(ctx, cp, out), ls = all_gather_f64(ctx, cp, lse);
    const AttnView view = bshd_view(sh.q_rows, sh.z1, sh.dim);
    AttnGradsF64 total{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
    const int me = cp.rank;
    for (int other = 0; other < cp.size; ++other) {
        for (int role = 0; role < 2; ++role) { // 0: my queries, other's keys; 1: other's queries, my keys
            const int i = role == 0 ? me : other, j = role == 0 ? other : me;
            if (!ring_block_used(sh.causal, i, j, cp.size))
                continue;
            AttnShape block = sh;
            block.causal = sh.causal && i == j;
            const std::vector<double> qi = stack_block(qs, i, n), kj = stack_block(ks, j, n);
            const std::vector<double> vj = stack_block(vs, j, n);
            const AttnGradsF64 g =
                attention_backward_f64(block, {qi, kj, vj, view, view, view}, stack_block(ds, i, n),
                                       stack_block(os, i, n), stack_block(ls, i, nl));
            for (std::size_t e = 0; e < n; ++e) {
                if (role == 0)
                    total.dq[e] += g.dq[e];
                else {
                    total.dk[e] += g.dk[e];
                    total.dv[e] += g.dv[e];
                }
            }
        }
    }
    return total;
}

} // namespace pkbw::tk
