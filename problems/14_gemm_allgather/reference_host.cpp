// Host oracle for PKB problem 14: local GEMM in double rounded to the dtype, all-gathered and placed side by
// side.
#include "pkbw/solution.h"
#include "pkbw/toolkit/sharded_gemm_host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::tk::LocalProduct c = pkbw::tk::input_product_rounded_f64(ctx);
    pkbw::tk::store_all(ctx.output(0), pkbw::tk::gather_columns_f64(ctx, c.values, c.rows, c.cols));
    return 0;
}
