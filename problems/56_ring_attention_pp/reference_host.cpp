// Host oracle for PKB problem 56: stage s + 1 takes stage s's rounded output through
// tk::ring_shift_f64 over the PP group; every stage runs the toolkit's float64 attention layer inside
// its CP group, rounded once to D.
#include "pkbw/solution.h"
#include "pkbw/toolkit/cp_layout.h"
#include "pkbw/toolkit/ring_attention_layer_host.h"
#include "pkbw/toolkit/ring_host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const int pp = static_cast<int>(ctx.param("pp_size", tk::pkb_pair_size(ctx.world_size)));
    if (pp < 1 || pp > 2 || ctx.world_size % pp != 0) {
        return ctx.fail("56 oracle: pp_size must be 1 or 2 and divide W");
    }
    const tk::CpGroups groups = tk::cp_major_groups(ctx, pp);
    const pkbw::DType dt = ctx.input(0).dtype;
    const tk::AttentionLayerDims dims =
        tk::attention_layer_dims(ctx, static_cast<long long>(ctx.param("num_heads", 8)));
    const std::vector<double> w_qkv = tk::to_f64(ctx.input(1)), w_o = tk::to_f64(ctx.input(2));
    // ctx.all_gather_host is one rendezvous of the whole world even for a group, so every rank replays
    // every stage (a stage's CP gathers are matched by all ranks) and keeps its own stage's result.
    std::vector<double> stage_input = tk::to_f64(ctx.input(0)), y;
    for (int stage = 0; stage < groups.other.size; ++stage) {
        std::vector<double> out =
            tk::ring_attention_layer_f64(ctx, groups.cp, dims, dt, stage_input, w_qkv, w_o);
        tk::round_all(dt, out);
        if (stage == groups.other.rank) {
            y = out;
        }
        if (stage + 1 < groups.other.size) {
            stage_input = tk::ring_shift_f64(ctx, groups.other, out); // stage + 1 receives stage's output
        }
    }
    tk::store_all(ctx.output(0), y);
    return 0;
}
