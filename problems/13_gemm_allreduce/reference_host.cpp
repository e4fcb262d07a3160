// Host oracle for PKB problem 13: local GEMM in double rounded to the dtype, then the products of every rank
// summed in double.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <vector>

using pkbw::tk::gemm_rounded;
using pkbw::tk::store;
using pkbw::tk::to_f64;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
    const std::vector<double> c =
        gemm_rounded(to_f64(a.data, a.dtype, m * k), to_f64(b.data, b.dtype, k * n), m, n, k, out.dtype);
    const std::vector<double> sum = pkbw::tk::all_reduce_sum_f64(ctx, c);
    for (std::int64_t i = 0; i < m * n; ++i) {
        store(out, i, sum[i]);
    }
    return 0;
}
