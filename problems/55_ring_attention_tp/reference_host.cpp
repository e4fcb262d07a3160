// Host oracle for PKB problem 55: the toolkit's float64 attention layer inside the CP group (qkv and
// the context rounded to D), the projection rounded to D, summed over the TP pair in double and
// rounded once (NCCL's sum of two D values is one rounding).
#include "pkbw/solution.h"
#include "pkbw/toolkit/cp_layout.h"
#include "pkbw/toolkit/ring_attention_layer_host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const int tp = static_cast<int>(ctx.param("tp_size", tk::pkb_pair_size(ctx.world_size)));
    const int heads = static_cast<int>(ctx.param("num_heads", 8));
    if (tp < 1 || ctx.world_size % tp != 0 || heads % tp != 0) {
        return ctx.fail("55 oracle: tp_size must divide W and num_heads");
    }
    const tk::CpGroups groups = tk::tp_cp_groups(ctx, tp);
    const pkbw::TensorView& hidden = ctx.input(0);
    const tk::AttentionLayerDims dims = tk::attention_layer_dims(ctx, heads / tp);
    std::vector<double> y =
        tk::ring_attention_layer_f64(ctx, groups.cp, dims, hidden.dtype, tk::to_f64(hidden),
                                     tk::to_f64(ctx.input(1)), tk::to_f64(ctx.input(2)));
    tk::round_all(hidden.dtype, y);
    tk::store_all(ctx.output(0), tp > 1 ? tk::all_reduce_sum_f64(ctx, groups.other, y) : y);
    return 0;
}
