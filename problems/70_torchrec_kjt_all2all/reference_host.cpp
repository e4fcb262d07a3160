// Host oracle for PKB problem 70: the lengths and the values of each destination's features go out by
// tk::all_to_all_v_host (its counts exchange first), then the received rows (one per source rank and
// feature, B lengths each) are regrouped feature-major with their value segments (TorchRec's recat,
// tk::recat_feature_major); the values' count is reported as that output's length.
#include "pkbw/solution.h"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/jagged.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const std::vector<long long> splits = pkbw::tk::rank_list(ctx, "key_splits");
    if (splits.empty()) {
        return ctx.fail("70 oracle: key_splits needs one entry per rank");
    }
    const long long batch = static_cast<long long>(ctx.param("batch_size", 0));
    const pkbw::tk::JaggedSplit plan =
        pkbw::tk::split_jagged(ctx.input(0).as<const long long>(), splits, batch);
    const auto lengths = pkbw::tk::all_to_all_v_host(ctx, ctx.input(0).data, plan.length_counts, 8);
    const auto values = pkbw::tk::all_to_all_v_host(ctx, ctx.input(1).data, plan.value_counts, 8);
    const long long mine = splits[ctx.rank];
    const auto* rows = reinterpret_cast<const long long*>(lengths.data());
    auto* out_lengths = ctx.output(0).as<long long>();
    auto* out_values = ctx.output(1).as<long long>();
    long long at = 0, written = 0;
    for (const pkbw::tk::SegmentMove& r : pkbw::tk::recat_feature_major(rows, mine, ctx.world_size, batch)) {
        if (written + r.value_count > ctx.output(1).shape[0]) {
            return ctx.fail("70 oracle: more values arrive than the output's bound");
        }
        std::memcpy(out_lengths + at++ * batch, rows + r.row * batch, sizeof(long long) * batch);
        std::memcpy(out_values + written, values.data() + r.value_offset * 8,
                    sizeof(long long) * r.value_count);
        written += r.value_count;
    }
    ctx.output(2).as<long long>()[0] = ctx.world_size * batch;
    for (int s = 0; s < ctx.world_size; ++s) {
        ctx.output(3).as<long long>()[s] = batch;
    }
    return ctx.set_output_length(1, written);
}
