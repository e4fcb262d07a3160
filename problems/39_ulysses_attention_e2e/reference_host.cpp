// Host oracle for PKB problem 39: every rank's qkv (F.linear rounded to D) gathered; this rank's heads
// of every token collected as the all-to-all would deliver them ([W, B, S, heads/W, ...]); the
// toolkit's float64 head-axis attention with 39's per-op rounding; every rank's result gathered, this
// rank's tokens concatenated along the heads and projected (rounded once).
#include "pkbw/solution.h"
#include "pkbw/toolkit/attention_host.h"
#include "pkbw/toolkit/host.h"

#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& hidden = ctx.input(0);
    const pkbw::DType dt = hidden.dtype;
    const int world = ctx.world_size, me = ctx.rank;
    const long long rows = hidden.shape[0] * hidden.shape[1], seq = hidden.shape[1], width = hidden.shape[2];
    const long long heads = static_cast<long long>(ctx.param("num_heads", 8)), head_dim = width / heads;
    if (heads % world != 0) {
        return ctx.fail("39 oracle: W must divide num_heads");
    }
    const long long local_heads = heads / world, piece = local_heads * head_dim;
    const std::vector<double> qkv = tk::gemm_rounded(tk::to_f64(hidden), tk::to_f64(ctx.input(1)), rows,
                                                     3 * width, width, dt, false, true);
    const std::vector<double> all = tk::all_gather_f64(ctx, qkv);

    std::vector<double> q(static_cast<std::size_t>(world * rows * piece)), kv(2 * q.size());
    for (int p = 0; p < world; ++p)
        for (long long r = 0; r < rows; ++r)
            for (long long x = 0; x < piece; ++x) {
                const double* token = &all[(p * rows + r) * 3 * width + me * piece + x];
                const long long h = x / head_dim, e = x % head_dim, chunk = p * rows + r;
                q[chunk * piece + x] = token[0];
                kv[((chunk * local_heads + h) * 2 + 0) * head_dim + e] = token[width];
                kv[((chunk * local_heads + h) * 2 + 1) * head_dim + e] = token[2 * width];
            }
    const tk::AttnShape sh = tk::head_axis_shape(world * hidden.shape[0], seq, local_heads, head_dim);
    const tk::AttnView q_view = tk::head_axis_view(seq, local_heads, head_dim);
    std::vector<double> attn(q.size());
    tk::attention_f64(sh,
                      {q, kv, kv, q_view, tk::head_axis_view(seq, local_heads, 2 * head_dim),
                       tk::head_axis_view(seq, local_heads, 2 * head_dim, head_dim)},
                      attn, q_view, nullptr, dt);

    const std::vector<double> results = tk::all_gather_f64(ctx, attn);
    std::vector<double> context(static_cast<std::size_t>(rows * width));
    for (int p = 0; p < world; ++p)
        for (long long r = 0; r < rows; ++r)
            for (long long x = 0; x < piece; ++x)
                context[r * width + p * piece + x] = results[(p * world * rows + me * rows + r) * piece + x];
    tk::store_all(ctx.output(0),
                  tk::gemm_f64(context, tk::to_f64(ctx.input(2)), rows, width, width, false, true));
    return 0;
}
