// Host oracle for PKB problem 43 on the toolkit: tk::adam_update_f64 (double, rounded to the dtype
// after every torch op) on copies of the shard, then a host all-gather.
#include "pkbw/solution.h"
#include "pkbw/toolkit/adam_host.h"
#include "pkbw/toolkit/host.h"

#include <vector>

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::DType d = ctx.input(0).dtype;
    std::vector<double> w = tk::to_f64(ctx.input(1)), m = tk::to_f64(ctx.input(2)),
                        v = tk::to_f64(ctx.input(3));
    tk::adam_update_f64(d, tk::to_f64(ctx.input(0)), w, m, v, tk::adam_hyper(ctx, tk::AdamRule::ScaledStep));
    tk::store_all(ctx.output(0), tk::all_gather_f64(ctx, w));
    return 0;
}
