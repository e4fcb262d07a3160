// Reference for PKB problem 56: PKB's CP x PP grid (tk::cp_major_groups); stage 1 first receives
// stage 0's output from its PP peer (tk::ring_shift, receive only), every stage runs the toolkit's
// attention layer with its CP communicator, and stage 0 then sends its output (send only).
#include "pkbw/solution.h"
#include "pkbw/toolkit/cp_layout.h"
#include "pkbw/toolkit/ring_attention_layer.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const int pp = static_cast<int>(ctx.param("pp_size", tk::pkb_pair_size(ctx.world_size)));
    if (pp < 1 || ctx.world_size % pp != 0) {
        return ctx.fail("56 reference: pp_size must divide W");
    }
    const tk::CpGroups groups = tk::cp_major_groups(ctx, pp);
    const bool first = groups.other.rank == 0, last = groups.other.rank == groups.other.size - 1;
    const pkbw::TensorView& hidden = ctx.input(0);
    const pkbw::TensorView& y = ctx.output(0);
    const tk::AttentionLayerDims dims =
        tk::attention_layer_dims(ctx, static_cast<long long>(ctx.param("num_heads", 8)));
    const void* stage_input = hidden.data;
    if (!first) {
        void* received = ctx.scratch("pp56_stage_input", hidden.nbytes());
        const tk::RingBuffer from_prev{nullptr, received, hidden.nbytes()};
        PKBW_TRY(tk::ring_shift(ctx, groups.other, &from_prev, 1, false, true));
        stage_input = received;
    }
    PKBW_TRY(tk::dispatch_float(ctx, hidden.dtype, "56 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        return tk::ring_attention_layer<T>(ctx, groups.cp, hidden.dtype, dims,
                                           static_cast<const T*>(stage_input), ctx.input(1).as<T>(),
                                           ctx.input(2).as<T>(), y.as<T>());
    }));
    if (!last) {
        const tk::RingBuffer to_next{y.data, nullptr, y.nbytes()};
        PKBW_TRY(tk::ring_shift(ctx, groups.other, &to_next, 1, true, false));
    }
    return tk::finish(ctx);
}
