// Reference for PKB problem 55: PKB's TP x CP grid (tk::tp_cp_groups), the toolkit's attention layer
// (F.linear on cuBLAS, q/k/v made contiguous, ring attention inside the CP communicator, F.linear),
// then ncclAllReduce in D over the TP communicator.
#include "pkbw/solution.h"
#include "pkbw/toolkit/cp_layout.h"
#include "pkbw/toolkit/ring_attention_layer.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const int tp = static_cast<int>(ctx.param("tp_size", tk::pkb_pair_size(ctx.world_size)));
    const int heads = static_cast<int>(ctx.param("num_heads", 8));
    if (tp < 1 || ctx.world_size % tp != 0 || heads % tp != 0) {
        return ctx.fail("55 reference: tp_size must divide W and num_heads");
    }
    const tk::CpGroups groups = tk::tp_cp_groups(ctx, tp);
    const pkbw::TensorView& hidden = ctx.input(0);
    const pkbw::TensorView& y = ctx.output(0);
    const tk::AttentionLayerDims dims = tk::attention_layer_dims(ctx, heads / tp);
    PKBW_TRY(tk::dispatch_float(ctx, hidden.dtype, "55 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        return tk::ring_attention_layer<T>(ctx, groups.cp, hidden.dtype, dims, hidden.as<T>(),
                                           ctx.input(1).as<T>(), ctx.input(2).as<T>(), y.as<T>());
    }));
    if (tp > 1) {
        PKBW_CHECK(ctx, ncclAllReduce(y.data, y.data, static_cast<size_t>(y.numel()),
                                      pkbw::nccl_dtype(y.dtype), ncclSum, groups.other.nccl(), ctx.stream()));
    }
    return tk::finish(ctx);
}
