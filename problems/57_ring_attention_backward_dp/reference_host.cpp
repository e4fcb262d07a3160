// Host oracle for PKB problem 57: the toolkit's float64 ring attention backward inside the CP group
// (every block pair the ring visits, with each query rank's own out and lse), each gradient rounded
// to D, summed over the DP pair in double and rounded (NCCL's sum of two D values is one rounding),
// then divided by dp and rounded.
#include "pkbw/solution.h"
#include "pkbw/toolkit/cp_layout.h"
#include "pkbw/toolkit/ring_attention_host.h"

#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const int dp = static_cast<int>(ctx.param("dp_size", tk::pkb_pair_size(ctx.world_size)));
    if (dp < 1 || ctx.world_size % dp != 0) {
        return ctx.fail("57 oracle: dp_size must divide W");
    }
    const tk::CpGroups groups = tk::cp_major_groups(ctx, dp);
    const pkbw::TensorView& q = ctx.input(1);
    const pkbw::DType dt = q.dtype;
    const tk::AttnShape sh = tk::bshd_shape_of(q, ctx.param("causal", 0) != 0);
    tk::AttnGradsF64 g = tk::ring_attention_backward_f64(
        ctx, groups.cp, sh, tk::to_f64(ctx.input(0)), tk::to_f64(q), tk::to_f64(ctx.input(2)),
        tk::to_f64(ctx.input(3)), tk::to_f64(ctx.input(4)), tk::to_f64(ctx.input(5)));
    std::vector<double>* grads[] = {&g.dq, &g.dk, &g.dv};
    for (int i = 0; i < 3; ++i) {
        std::vector<double>& x = *grads[i];
        tk::round_all(dt, x);
        if (dp > 1) {
            x = tk::all_reduce_sum_f64(ctx, groups.other, x);
            for (double& e : x)
                e = tk::round_to(dt, tk::round_to(dt, e) / dp);
        }
        tk::store_all(ctx.output(i), x);
    }
    return 0;
}
