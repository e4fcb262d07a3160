// Host oracle for PKB problem 53: the toolkit's host delayed-scaling round trip (fp32 as torch on
// CUDA), then a host all-gather of the round-tripped shards (already rounded to D: exact).
#include "pkbw/solution.h"
#include "pkbw/toolkit/fp8_scaling_host.h"
#include "pkbw/toolkit/host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const tk::Fp8RoundTrip trip = tk::fp8_delayed_round_trip_host(ctx.input(0), ctx.input(1));
    tk::store_all(ctx.output(0), tk::all_gather_f64(ctx, trip.recon));
    tk::store_all(ctx.output(1), trip.history);
    return 0;
}
