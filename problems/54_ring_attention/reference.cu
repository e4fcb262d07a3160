// Reference for PKB problem 54: the world as one context-parallel group, the toolkit's ring
// attention (K/V exchanged with ncclSend/ncclRecv to the next/previous rank, one hand kernel per
// block with its log-sum-exp, merged in fp32 in PKB's sigmoid form, rounded once to D).
#include "pkbw/solution.h"
#include "pkbw/toolkit/ring_attention.cuh"

#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& q = ctx.input(0);
    const pkbw::SubComm world = ctx.sub_comm_blocks(ctx.world_size);
    const tk::AttnShape sh = tk::bshd_shape_of(q, ctx.param("causal", 1) != 0);
    PKBW_TRY(tk::dispatch_float(ctx, q.dtype, "54 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        return tk::ring_attention_forward<T>(ctx, world, sh, q.as<T>(), ctx.input(1).as<T>(),
                                             ctx.input(2).as<T>(), ctx.output(0).as<T>());
    }));
    return tk::finish(ctx);
}
