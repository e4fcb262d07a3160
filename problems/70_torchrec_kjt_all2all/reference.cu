// Reference for PKB problem 70: the lengths come to the host for the split (tk::split_jagged: each
// destination's rows and their value counts), the counts exchange (tk::exchange_counts), two
// tk::all_to_all_v, then the received rows come to the host for TorchRec's recat: one device-to-device copy
// per (feature, source) row of lengths and of its value segment; the values' count is reported as that
// output's length.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/jagged.h"

#include <algorithm>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int world = ctx.world_size;
    std::vector<long long> lengths(static_cast<std::size_t>(ctx.input(0).shape[0]));
    PKBW_CHECK(ctx, cudaMemcpyAsync(lengths.data(), ctx.input(0).data, ctx.input(0).nbytes(),
                                    cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    const std::vector<long long> splits = pkbw::tk::rank_list(ctx, "key_splits");
    if (splits.empty()) {
        return ctx.fail("70 reference: key_splits needs one entry per rank");
    }
    const long long batch = static_cast<long long>(ctx.param("batch_size", 0));
    const pkbw::tk::JaggedSplit plan = pkbw::tk::split_jagged(lengths.data(), splits, batch);
    const long long mine = splits[ctx.rank], rows = mine * world;
    const std::vector<long long> recv_values = pkbw::tk::exchange_counts(ctx, plan.value_counts);
    const std::vector<long long> recv_lengths(world, mine * batch);
    auto* got_lengths =
        static_cast<long long*>(ctx.scratch("kjt70_lengths", sizeof(long long) * rows * batch));
    auto* got_values = static_cast<long long*>(
        ctx.scratch("kjt70_values", sizeof(long long) * std::max(1LL, pkbw::tk::total_of(recv_values))));
    PKBW_TRY(pkbw::tk::all_to_all_v(ctx, ctx.nccl(), ctx.input(0).data, plan.length_counts.data(),
                                    got_lengths, recv_lengths.data(), sizeof(long long)));
    PKBW_TRY(pkbw::tk::all_to_all_v(ctx, ctx.nccl(), ctx.input(1).data, plan.value_counts.data(), got_values,
                                    recv_values.data(), sizeof(long long)));
    std::vector<long long> host_rows(static_cast<std::size_t>(rows * batch));
    PKBW_CHECK(ctx, cudaMemcpyAsync(host_rows.data(), got_lengths, sizeof(long long) * rows * batch,
                                    cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    auto* out_lengths = ctx.output(0).as<long long>();
    auto* out_values = ctx.output(1).as<long long>();
    long long at = 0, written = 0;
    for (const pkbw::tk::SegmentMove& r :
         pkbw::tk::recat_feature_major(host_rows.data(), mine, world, batch)) {
        if (written + r.value_count > ctx.output(1).shape[0]) {
            return ctx.fail("70 reference: more values arrive than the output's bound");
        }
        PKBW_CHECK(ctx, cudaMemcpyAsync(out_lengths + at++ * batch, got_lengths + r.row * batch,
                                        sizeof(long long) * batch, cudaMemcpyDeviceToDevice, ctx.stream()));
        PKBW_CHECK(ctx, cudaMemcpyAsync(out_values + written, got_values + r.value_offset,
                                        sizeof(long long) * r.value_count, cudaMemcpyDeviceToDevice,
                                        ctx.stream()));
        written += r.value_count;
    }
    std::vector<long long> strides(world + 1, batch);
    strides[0] = world * batch;
    PKBW_CHECK(ctx, cudaMemcpyAsync(ctx.output(2).data, strides.data(), sizeof(long long),
                                    cudaMemcpyHostToDevice, ctx.stream()));
    PKBW_CHECK(ctx, cudaMemcpyAsync(ctx.output(3).data, strides.data() + 1, sizeof(long long) * world,
                                    cudaMemcpyHostToDevice, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream())); // strides live on this stack
    return ctx.set_output_length(1, written);
}
