// Host oracle for PKB problem 72: z = x2 v rounded to D, every rank's z gathered; this rank's channel
// block over the whole sequence (zigzag order undone, tk::zigzag_position); the toolkit's float64 long
// convolution (tk::long_convolution_f64) plus z bias, rounded to D; every rank's block gathered; this
// rank's zigzag chunks times x1, rounded to D, written transposed ([2N, C]).
#include "pkbw/solution.h"
#include "pkbw/toolkit/fft_conv_host.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/zigzag.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::DType dt = ctx.input(0).dtype;
    const int world = ctx.world_size, me = ctx.rank;
    const long long chans = ctx.input(0).shape[1], ls = ctx.input(0).shape[2], half = ls / 2,
                    taps = ctx.input(3).shape[1], local = chans / world, length = ls * world,
                    chunks = 2LL * world;
    if (chans % world != 0 || ls % 2 != 0) {
        return ctx.fail("72 oracle: W must divide the channels and the local sequence must be even");
    }
    std::vector<double> z = tk::to_f64(ctx.input(1));
    const std::vector<double> v = tk::to_f64(ctx.input(2));
    for (std::size_t i = 0; i < z.size(); ++i) {
        z[i] = tk::round_to(dt, z[i] * v[i]);
    }
    const std::vector<double> all_z = tk::all_gather_f64(ctx, z); // [W, C, ls]
    const std::vector<double> h = tk::to_f64(ctx.input(3)), bias = tk::to_f64(ctx.input(4));

    // This rank's channels over the global sequence: chunk k of N samples sits at zigzag position p, i.e.
    // in half p % 2 of rank p / 2's local sequence.
    std::vector<double> u(static_cast<std::size_t>(local * length));
    for (long long c = 0; c < local; ++c)
        for (long long g = 0; g < length; ++g) {
            const long long p = tk::zigzag_position(g / half, chunks), owner = p / 2;
            u[c * length + g] = all_z[(owner * chans + me * local + c) * ls + (p % 2) * half + g % half];
        }
    const std::vector<double> own_h(h.begin() + me * local * taps, h.begin() + (me + 1) * local * taps);
    std::vector<double> y = tk::long_convolution_f64({local, length, taps, 2 * length}, u, own_h);
    for (long long c = 0; c < local; ++c)
        for (long long g = 0; g < length; ++g) {
            const std::size_t i = static_cast<std::size_t>(c * length + g);
            y[i] = tk::round_to(dt, y[i] + u[i] * bias[me * local + c]);
        }
    const std::vector<double> all_y = tk::all_gather_f64(ctx, y); // [W, C/W, L] = [C, L]

    const std::vector<double> x1 = tk::to_f64(ctx.input(0));
    std::vector<double> out(static_cast<std::size_t>(ls * chans));
    for (long long t = 0; t < ls; ++t) {
        const long long g = tk::zigzag_chunk(2LL * me + t / half, chunks) * half + t % half;
        for (long long c = 0; c < chans; ++c) {
            out[t * chans + c] = x1[c * ls + t] * all_y[c * length + g];
        }
    }
    tk::store_all(ctx.output(0), out);
    return 0;
}
