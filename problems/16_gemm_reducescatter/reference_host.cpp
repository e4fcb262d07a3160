// Host oracle for PKB problem 16: local GEMM in double rounded to the dtype; one host all-gather per row
// block, summed by its owner in double.
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
    const std::int64_t m = a.shape[0], kl = a.shape[1], n = b.shape[1];
    const int world = ctx.world_size;
    const std::vector<double> c =
        gemm_rounded(to_f64(a.data, a.dtype, m * kl), to_f64(b.data, b.dtype, kl * n), m, n, kl, out.dtype);
    const std::int64_t block = (m / world) * n;
    std::vector<double> all(static_cast<std::size_t>(block * world));
    for (int k = 0; k < world; ++k) {
        ctx.all_gather_host(c.data() + k * block, block * sizeof(double), all.data());
        if (k != ctx.rank) {
            continue;
        }
        for (std::int64_t i = 0; i < block; ++i) {
            double sum = 0;
            for (int r = 0; r < world; ++r) {
                sum += all[r * block + i];
            }
            store(out, i, sum);
        }
    }
    return 0;
}
