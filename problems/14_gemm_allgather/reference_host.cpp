// Host oracle for PKB problem 14: local GEMM in double rounded to the dtype, all-gathered and placed side by
// side.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/permute_host.h"

#include <vector>

using pkbw::tk::gemm_rounded;
using pkbw::tk::store;
using pkbw::tk::to_f64;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const std::int64_t m = a.shape[0], k = a.shape[1], nl = b.shape[1];
    const int world = ctx.world_size;
    const std::vector<double> c =
        gemm_rounded(to_f64(a.data, a.dtype, m * k), to_f64(b.data, b.dtype, k * nl), m, nl, k, out.dtype);
    // [W, M, N/W] -> [M, W, N/W] = [M, N]
    const long long shape[] = {world, m, nl};
    const int perm[] = {1, 0, 2};
    pkbw::tk::store_all(out, pkbw::tk::permuted(pkbw::tk::all_gather_f64(ctx, c), 3, shape, perm));
    return 0;
}
