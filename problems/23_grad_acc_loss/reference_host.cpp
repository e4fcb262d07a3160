// Host oracle for PKB problem 23: torch's 0-dim arithmetic in D, each operation rounded to D (the
// int64 counts are cast to D first, as type promotion does); the cross-rank sum is exact in double
// and rounded once (NCCL's bf16 reduction rounds per step: within the tolerance).
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::DType d = ctx.output(0).dtype;
    auto load = [&](int i) { return tk::to_f64(ctx.input(i))[0]; };
    auto r = [&](double v) { return tk::round_to(d, v); };
    double loss = load(0);
    const double local = r(load(1)), global = r(load(2));
    const double g_norm = load(3), g_sum = load(4);
    if (load(1) == 0 && std::isnan(loss)) {
        loss = 0; // PKB's nan_to_num when this rank has no valid tokens
    }
    const double loss_sum = r(tk::all_reduce_sum_f64(ctx, {r(loss * local)})[0]);
    tk::store(ctx.output(0), 0, loss_sum / global);
    tk::store(ctx.output(1), 0, loss_sum);
    tk::store(ctx.output(2), 0, r(r(g_norm * local) / global) + r(g_sum * local));
    return 0;
}
