// Host oracle for PKB problem 87: every rank's first and last `padding` rows gathered, the shard framed
// by its neighbours' rows (zeros at the ends), the toolkit's float64 direct convolution (conv_host.h)
// rounded to D, then the bias added and rounded again (torch's separate bias add).
#include "pkbw/solution.h"
#include "pkbw/toolkit/conv_host.h"
#include "pkbw/toolkit/host.h"

#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    const pkbw::DType dtype = x.dtype;
    const long long batch = x.shape[0], c = x.shape[1], h = x.shape[2], width = x.shape[3];
    const long long planes = batch * c, stride = static_cast<long long>(ctx.param("stride", 1.0));
    const long long pad = static_cast<long long>(ctx.param("padding", 1.0));
    const int world = ctx.world_size, rank = ctx.rank;
    const std::vector<double> mine = tk::to_f64(x);
    tk::ConvGeometry g;
    std::vector<double> source;
    if (pad == 0 || world == 1) {
        g = tk::conv2d_geometry(c, w.shape[0], h, width, w.shape[2], w.shape[3], stride, stride, pad, pad);
        source = mine;
    } else {
        // edges [2, planes, pad, L]: the first and the last `pad` rows of every plane.
        const long long edge = pad * width, rows = h + 2 * pad;
        std::vector<double> edges(static_cast<std::size_t>(2 * planes * edge));
        for (long long p = 0; p < planes; ++p)
            for (long long i = 0; i < edge; ++i) {
                edges[p * edge + i] = mine[p * h * width + i];
                edges[(planes + p) * edge + i] = mine[p * h * width + (h - pad) * width + i];
            }
        const std::vector<double> all = tk::all_gather_f64(ctx, edges);
        source.assign(static_cast<std::size_t>(planes * rows * width), 0.0);
        for (long long p = 0; p < planes; ++p) {
            double* framed = source.data() + p * rows * width;
            for (long long i = 0; i < edge; ++i) {
                if (rank > 0)
                    framed[i] = all[((rank - 1) * 2 + 1) * planes * edge + p * edge + i];
                if (rank < world - 1)
                    framed[(pad + h) * width + i] = all[(rank + 1) * 2 * planes * edge + p * edge + i];
            }
            for (long long i = 0; i < h * width; ++i)
                framed[pad * width + i] = mine[p * h * width + i];
        }
        g = tk::conv2d_geometry(c, w.shape[0], rows, width, w.shape[2], w.shape[3], stride, stride, 0, pad);
    }
    std::vector<double> y = tk::conv_f64(g, batch, source, tk::to_f64(w));
    const std::vector<double> bias = tk::to_f64(ctx.input(2));
    const long long positions = g.out_positions();
    for (std::size_t i = 0; i < y.size(); ++i)
        y[i] = tk::round_to(dtype, tk::round_to(dtype, y[i]) + bias[(i / positions) % g.out_channels]);
    tk::store_all(ctx.output(0), y);
    return 0;
}
