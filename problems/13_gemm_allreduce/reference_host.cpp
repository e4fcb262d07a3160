// Host oracle for PKB problem 13: local GEMM in double rounded to the dtype, then the products of every rank
// summed in double.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/sharded_gemm_host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::tk::LocalProduct c = pkbw::tk::input_product_rounded_f64(ctx);
    pkbw::tk::store_all(ctx.output(0), pkbw::tk::all_reduce_sum_f64(ctx, c.values));
    return 0;
}
