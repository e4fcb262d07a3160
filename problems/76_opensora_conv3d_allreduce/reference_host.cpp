// Host oracle for PKB problem 76: each rank's conv3d over its input-channel shard as the toolkit's
// float64 direct sum (conv_host.h) rounded to D, the partials summed over ranks with a rounding to D
// after each addition (dtype_collectives_host.h's model of NCCL's all-reduce in D), then the bias added
// and rounded again (torch's separate add).
#include "pkbw/solution.h"
#include "pkbw/toolkit/conv_host.h"
#include "pkbw/toolkit/dtype_collectives_host.h"
#include "pkbw/toolkit/host.h"

#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    const pkbw::DType dtype = x.dtype;
    if (static_cast<long long>(ctx.param("groups", 1.0)) != 1)
        return ctx.fail("76 oracle: groups must be 1");
    const long long in[3] = {x.shape[2], x.shape[3], x.shape[4]},
                    kernel[3] = {w.shape[2], w.shape[3], w.shape[4]};
    const tk::ConvGeometry g = tk::conv3d_geometry(x.shape[1], w.shape[0], in, kernel,
                                                   static_cast<long long>(ctx.param("stride", 1.0)),
                                                   static_cast<long long>(ctx.param("padding", 0.0)),
                                                   static_cast<long long>(ctx.param("dilation", 1.0)));
    std::vector<double> partial = tk::conv_f64(g, x.shape[0], tk::to_f64(x), tk::to_f64(w));
    for (double& value : partial)
        value = tk::round_to(dtype, value);
    std::vector<double> y = tk::all_reduce_sum_rounded(ctx, dtype, partial);
    const std::vector<double> bias = tk::to_f64(ctx.input(2));
    const long long positions = g.out_positions();
    for (std::size_t i = 0; i < y.size(); ++i)
        y[i] = tk::round_to(dtype, y[i] + bias[(i / positions) % g.out_channels]);
    tk::store_all(ctx.output(0), y);
    return 0;
}
