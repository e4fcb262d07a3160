// Host oracle for PKB problem 52: the toolkit's host delayed-scaling round trip (fp32 as torch on
// CUDA), the reduce-scatter as a double sum over ranks of this rank's chunk rounded to D once, then
// the division by W rounded to D.
#include "pkbw/solution.h"
#include "pkbw/toolkit/fp8_scaling_host.h"
#include "pkbw/toolkit/host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& out = ctx.output(0);
    const tk::Fp8RoundTrip trip = tk::fp8_delayed_round_trip_host(ctx.input(0), ctx.input(1));
    const std::vector<double> sums = tk::all_reduce_sum_f64(ctx, trip.recon);
    const std::int64_t chunk = out.numel();
    for (std::int64_t i = 0; i < chunk; ++i) {
        tk::store(out, i, tk::round_to(out.dtype, sums[ctx.rank * chunk + i]) / ctx.world_size);
    }
    tk::store_all(ctx.output(1), trip.history);
    return 0;
}
