// Reference for PKB problem 57: PKB's CP x DP grid (tk::cp_major_groups), the toolkit's ring
// attention backward inside the CP communicator (K/V and the fp32 dK/dV accumulators on two rings of
// ncclSend/ncclRecv, hand kernels for the block gradients), each gradient rounded to D, then
// ncclAllReduce in D over the DP communicator and a division by dp rounded to D.
#include "pkbw/solution.h"
#include "pkbw/toolkit/cp_layout.h"
#include "pkbw/toolkit/ring_attention.cuh"
#include "pkbw/toolkit/scale.cuh"

#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const int dp = static_cast<int>(ctx.param("dp_size", tk::pkb_pair_size(ctx.world_size)));
    if (dp < 1 || ctx.world_size % dp != 0) {
        return ctx.fail("57 reference: dp_size must divide W");
    }
    const tk::CpGroups groups = tk::cp_major_groups(ctx, dp);
    const pkbw::TensorView& q = ctx.input(1);
    const tk::AttnShape sh = tk::bshd_shape_of(q, ctx.param("causal", 0) != 0);
    PKBW_TRY(tk::dispatch_float(ctx, q.dtype, "57 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        return tk::ring_attention_backward<T>(
            ctx, groups.cp, sh, ctx.input(0).as<T>(), q.as<T>(), ctx.input(2).as<T>(), ctx.input(3).as<T>(),
            ctx.input(4).as<T>(), ctx.input(5).as<float>(), ctx.output(0).as<T>(), ctx.output(1).as<T>(),
            ctx.output(2).as<T>());
    }));
    if (dp > 1) {
        for (int i = 0; i < 3; ++i) {
            const pkbw::TensorView& g = ctx.output(i);
            PKBW_CHECK(ctx,
                       ncclAllReduce(g.data, g.data, static_cast<size_t>(g.numel()),
                                     pkbw::nccl_dtype(g.dtype), ncclSum, groups.other.nccl(), ctx.stream()));
            PKBW_TRY(tk::divide_in_place(ctx, g.dtype, g.data, g.numel(), dp));
        }
    }
    return tk::finish(ctx);
}
