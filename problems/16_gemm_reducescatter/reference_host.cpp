// Host oracle for PKB problem 16: local GEMM in double rounded to the dtype; one host all-gather per row
// block, summed by its owner in double.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/sharded_gemm_host.h"

#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::tk::LocalProduct c = pkbw::tk::input_product_rounded_f64(ctx);
    const pkbw::TensorView& out = ctx.output(0);
    const int world = ctx.world_size;
    const std::int64_t block = (c.rows / world) * c.cols;
    std::vector<double> all(static_cast<std::size_t>(block * world));
    for (int k = 0; k < world; ++k) {
        ctx.all_gather_host(c.values.data() + k * block, block * sizeof(double), all.data());
        if (k != ctx.rank) {
            continue;
        }
        for (std::int64_t i = 0; i < block; ++i) {
            double sum = 0;
            for (int r = 0; r < world; ++r) {
                sum += all[r * block + i];
            }
            pkbw::tk::store(out, i, sum);
        }
    }
    return 0;
}
