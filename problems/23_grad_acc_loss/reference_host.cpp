// Host oracle for PKB problem 23: torch's 0-dim arithmetic in D, each operation rounded to D (the
// int64 counts are cast to D first, as type promotion does); the cross-rank sum is exact in double
// and rounded once (NCCL's bf16 reduction rounds per step: within the tolerance).
#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

double load(const pkbw::TensorView& t) {
    return pkbw::element_to_f64(t.dtype, static_cast<const std::byte*>(t.data));
}

double round_to(pkbw::DType dtype, double value) {
    std::byte buf[8];
    pkbw::f64_to_element(dtype, value, buf);
    return pkbw::element_to_f64(dtype, buf);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::DType d = ctx.output(0).dtype;
    double loss = load(ctx.input(0));
    const double local = round_to(d, load(ctx.input(1)));
    const double global = round_to(d, load(ctx.input(2)));
    const double g_norm = load(ctx.input(3));
    const double g_sum = load(ctx.input(4));
    if (load(ctx.input(1)) == 0 && std::isnan(loss)) {
        loss = 0; // PKB's nan_to_num when this rank has no valid tokens
    }
    const double mine = round_to(d, loss * local);
    std::vector<double> all(static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(&mine, sizeof(mine), all.data());
    double sum = 0;
    for (const double v : all) {
        sum += v;
    }
    const double loss_sum = round_to(d, sum);
    const double normalized = round_to(d, loss_sum / global);
    const double from_normalized = round_to(d, round_to(d, g_norm * local) / global);
    const double from_sum = round_to(d, g_sum * local);
    const double grad = round_to(d, from_normalized + from_sum);
    const double results[3] = {normalized, loss_sum, grad};
    for (int i = 0; i < 3; ++i) {
        pkbw::f64_to_element(d, results[i], static_cast<std::byte*>(ctx.output(i).data));
    }
    return 0;
}
