// Host oracle for PKB problem 30: per tensor, the sum over ranks in double (toolkit
// all_reduce_sum_f64), one rounding to D.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    for (int k = 0; k < 3; ++k) {
        pkbw::tk::store_all(ctx.output(k), pkbw::tk::all_reduce_sum_f64(ctx, pkbw::tk::to_f64(ctx.input(k))));
    }
    return 0;
}
