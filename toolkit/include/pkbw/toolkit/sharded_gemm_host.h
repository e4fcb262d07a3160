// The host oracles' pieces of PKB's sharded GEMMs (11-16), in float64 (pkbw reference toolkit): the
// column shards of a matrix gathered back into it, the rank's own product of its two inputs, and the
// whole oracle of 11 and 12 (A gathered along K, times the rank's B).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/permute_host.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pkbw::tk {

// Every rank's [rows, cols] block side by side: [rows, W·cols] (PKB's all-gather, then torch.cat
// along dim 1).
inline std::vector<double> gather_columns_f64(const Context& ctx, const std::vector<double>& block,
                                              std::int64_t rows, std::int64_t cols) {
    // [W, rows, cols] -> [rows, W, cols]
    const long long shape[] = {ctx.world_size, rows, cols};
    const int perm[] = {1, 0, 2};
    return permuted(all_gather_f64(ctx, block), 3, shape, perm);
}

// input(0) [m, k] · input(1) [k, n] in double, rounded once to the output's dtype: the product PKB
// materialises on each rank before exchanging it (13, 14, 16).
struct LocalProduct {
    std::vector<double> values; // [rows, cols]
    std::int64_t rows = 0;
    std::int64_t cols = 0;
};
inline LocalProduct input_product_rounded_f64(const Context& ctx) {
    const TensorView& a = ctx.input(0);
    const TensorView& b = ctx.input(1);
    const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
    return {gemm_rounded(to_f64(a), to_f64(b), m, n, k, ctx.output(0).dtype), m, n};
}

// 11 and 12: A's K-shards A_local [M, K/W] gathered along K into A [M, K], times this rank's own
// B [K, N] in double, one rounding per output element (PKB's transposes in 11 do not change the
// values). `problem` names the problem in the error for a B whose height is not W·K/W.
inline int allgather_gemm_oracle(const Context& ctx, const std::string& problem) {
    const TensorView& a_local = ctx.input(0);
    const TensorView& b = ctx.input(1);
    const std::int64_t m = a_local.shape[0], kl = a_local.shape[1], n = b.shape[1];
    const std::int64_t k = kl * ctx.world_size;
    if (b.shape[0] != k) {
        return ctx.fail((problem + " host reference: B must have W * K_local rows").c_str());
    }
    const std::vector<double> a = gather_columns_f64(ctx, to_f64(a_local), m, kl);
    store_all(ctx.output(0), gemm_f64(a, to_f64(b), m, n, k));
    return 0;
}

} // namespace pkbw::tk
