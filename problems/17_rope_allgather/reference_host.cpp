// Host oracle for PKB problem 17: RoPE in double with PyTorch's per-op rounding to the dtype, host
// all-gather of the results, placement along the sequence.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/permute_host.h"

#include <vector>

using pkbw::tk::round_to;
using pkbw::tk::store;
using pkbw::tk::to_f64;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& q = ctx.input(0);
    const std::int64_t batch = q.shape[0], seq = q.shape[1], heads = q.shape[2], dim = q.shape[3];
    const std::int64_t local = q.numel();
    const pkbw::DType dt = q.dtype;
    const std::vector<double> cs = to_f64(ctx.input(2).data, dt, batch * seq * dim);
    const std::vector<double> sn = to_f64(ctx.input(3).data, dt, batch * seq * dim);
    const int world = ctx.world_size;
    const std::int64_t inner = local / batch; // one rank's chunk of one batch entry
    for (int t = 0; t < 2; ++t) {
        const std::vector<double> x = to_f64(ctx.input(t).data, dt, local);
        std::vector<double> y(static_cast<std::size_t>(local));
        for (std::int64_t i = 0; i < local; ++i) {
            const std::int64_t d = i % dim;
            const std::int64_t pos = i / (heads * dim);
            const double rotated = d < dim / 2 ? -x[i + dim / 2] : x[i - dim / 2];
            const double a = round_to(dt, x[i] * cs[pos * dim + d]);
            const double b = round_to(dt, rotated * sn[pos * dim + d]);
            y[i] = round_to(dt, a + b);
        }
        // [W, B, S*8*64] -> [B, W, S*8*64] = [B, W*S, 8, 64]
        const long long shape[] = {world, batch, inner};
        const int perm[] = {1, 0, 2};
        pkbw::tk::store_all(ctx.output(t),
                            pkbw::tk::permuted(pkbw::tk::all_gather_f64(ctx, y), 3, shape, perm));
    }
    return 0;
}
