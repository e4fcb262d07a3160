// Host oracle for PKB problem 15: gather x, then only this rank's row block (the other ranks add
// zeros to it): silu(x W1) and its product with W2 in double, each GEMM and the SiLU rounded to the
// dtype as PKB's tensors are.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/sharded_gemm_host.h"

#include <cmath>
#include <vector>

using pkbw::tk::gemm_rounded;
using pkbw::tk::round_to;
using pkbw::tk::store;
using pkbw::tk::to_f64;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x_local = ctx.input(0);
    const pkbw::TensorView& w1 = ctx.input(1);
    const pkbw::TensorView& w2 = ctx.input(2);
    const pkbw::TensorView& out = ctx.output(0);
    const pkbw::DType dt = out.dtype;
    const int world = ctx.world_size;
    const std::int64_t rows = x_local.shape[0], hl = x_local.shape[1], hidden = w1.shape[0], f = w1.shape[1];
    const std::int64_t rows_local = rows / world;
    const std::vector<double> x_all = pkbw::tk::gather_columns_f64(ctx, to_f64(x_local), rows, hl);
    // x [Mr, H] (the shards side by side); this rank's row block of it.
    const std::vector<double> x(x_all.begin() + ctx.rank * rows_local * hidden,
                                x_all.begin() + (ctx.rank + 1) * rows_local * hidden);
    std::vector<double> a = gemm_rounded(x, to_f64(w1.data, w1.dtype, hidden * f), rows_local, f, hidden, dt);
    for (double& v : a) {
        v = round_to(dt, v / (1.0 + std::exp(-v)));
    }
    const std::vector<double> y =
        gemm_rounded(a, to_f64(w2.data, w2.dtype, f * hidden), rows_local, hidden, f, dt);
    for (std::int64_t i = 0; i < rows_local * hidden; ++i) {
        store(out, i, y[i]);
    }
    return 0;
}
