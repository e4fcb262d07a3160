// Host oracle for PKB problem 54: the toolkit's float64 ring attention (every rank's K/V gathered,
// the ring's block schedule and sigmoid-form merges replayed in double), rounded once to D.
#include "pkbw/solution.h"
#include "pkbw/toolkit/ring_attention_host.h"

#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& q = ctx.input(0);
    const pkbw::SubComm world = ctx.sub_comm_blocks(ctx.world_size);
    const tk::AttnShape sh = tk::bshd_shape_of(q, ctx.param("causal", 1) != 0);
    tk::store_all(ctx.output(0),
                  tk::ring_attention_forward_f64(ctx, world, sh, tk::to_f64(q), tk::to_f64(ctx.input(1)),
                                                 tk::to_f64(ctx.input(2))));
    return 0;
}
