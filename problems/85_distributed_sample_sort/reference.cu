// Reference for PKB problem 85, PKB's sample sort step by step: the shard sorted (tk::sort_keys, CUB),
// the shard sizes gathered (tk::gather_counts), one regular sample per active rank (tk::gather_rows),
// the samples gathered on the host and the splitters chosen (tk::choose_splitters), the bucket bounds
// from tk::searchsorted (left and right), the buckets exchanged (tk::exchange_counts +
// tk::all_to_all_v), the received runs sorted again, and the exact rebalance (tk::rebalance_counts, a
// second tk::all_to_all_v) straight into the output.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/gather.cuh"
#include "pkbw/toolkit/sample_sort.cuh"
#include "pkbw/toolkit/sample_sort.h"
#include "pkbw/toolkit/sort.cuh"

#include <vector>

namespace {

using pkbw::tk::SortSample;

template <class T>
T* scratch_of(const pkbw::Context& ctx, const char* name, long long n) {
    return static_cast<T*>(ctx.scratch(name, sizeof(T) * static_cast<std::size_t>(n > 0 ? n : 1)));
}

template <class T>
int to_host(const pkbw::Context& ctx, const T* device, std::size_t n, std::vector<T>& host) {
    host.resize(n);
    if (n > 0) {
        PKBW_CHECK(ctx,
                   cudaMemcpyAsync(host.data(), device, sizeof(T) * n, cudaMemcpyDeviceToHost, ctx.stream()));
        PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    }
    return 0;
}

// This rank's regular samples (`active` slots, rank -1 where there is none), gathered from every rank.
template <class T>
int gather_samples(const pkbw::Context& ctx, const T* sorted, long long n, long long sort_rank,
                   long long active, std::vector<SortSample>& all) {
    std::vector<SortSample> mine(static_cast<std::size_t>(active));
    if (sort_rank >= 0) {
        const std::vector<long long> positions = pkbw::tk::regular_sample_positions(n, active);
        const auto count = static_cast<long long>(positions.size());
        auto* ids = scratch_of<long long>(ctx, "sort85_sample_ids", count);
        T* values = scratch_of<T>(ctx, "sort85_sample_values", count);
        PKBW_CHECK(ctx, cudaMemcpyAsync(ids, positions.data(), sizeof(long long) * positions.size(),
                                        cudaMemcpyHostToDevice, ctx.stream()));
        PKBW_TRY(pkbw::tk::gather_rows(ctx, sorted, sizeof(T), ids, count, n, values));
        std::vector<T> picked;
        PKBW_TRY(to_host(ctx, values, positions.size(), picked));
        for (std::size_t i = 0; i < positions.size(); ++i) {
            mine[i] = {pkbw::tk::key_to_double(picked[i]), sort_rank, positions[i]};
        }
    }
    all.resize(mine.size() * static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(mine.data(), sizeof(SortSample) * mine.size(), all.data());
    return 0;
}

// The bucket bounds of this rank's sorted shard for the splitters (searchsorted left and right on the
// device).
template <class T>
int bucket_bounds(const pkbw::Context& ctx, const T* sorted, long long n, long long sort_rank,
                  const std::vector<SortSample>& splitters, std::vector<long long>& bounds) {
    const long long count = static_cast<long long>(splitters.size());
    std::vector<long long> left(splitters.size()), right(splitters.size());
    if (sort_rank >= 0 && count > 0) {
        std::vector<T> probes;
        for (const SortSample& s : splitters) {
            probes.push_back(pkbw::tk::key_from_double<T>(s.value));
        }
        T* probes_dev = scratch_of<T>(ctx, "sort85_probes", count);
        auto* found = scratch_of<long long>(ctx, "sort85_found", 2 * count);
        PKBW_CHECK(ctx, cudaMemcpyAsync(probes_dev, probes.data(), sizeof(T) * probes.size(),
                                        cudaMemcpyHostToDevice, ctx.stream()));
        PKBW_TRY(pkbw::tk::searchsorted(ctx, sorted, n, probes_dev, count, false, found));
        PKBW_TRY(pkbw::tk::searchsorted(ctx, sorted, n, probes_dev, count, true, found + count));
        std::vector<long long> both;
        PKBW_TRY(to_host(ctx, found, 2 * splitters.size(), both));
        left.assign(both.begin(), both.begin() + count);
        right.assign(both.begin() + count, both.end());
    }
    bounds = pkbw::tk::split_boundaries(splitters, sort_rank, n, left, right);
    return 0;
}

template <class T>
int sample_sort(const pkbw::Context& ctx) {
    const int world = ctx.world_size;
    const long long n = ctx.input(0).shape[0];
    T* sorted = scratch_of<T>(ctx, "sort85_sorted", n);
    PKBW_TRY(pkbw::tk::sort_keys(ctx, ctx.input(0).as<const T>(), sorted, n));
    const std::vector<long long> sizes = pkbw::tk::gather_counts(ctx, n);
    std::vector<int> active;
    long long sort_rank = -1;
    for (int r = 0; r < world; ++r) {
        if (sizes[static_cast<std::size_t>(r)] > 0) {
            sort_rank = r == ctx.rank ? static_cast<long long>(active.size()) : sort_rank;
            active.push_back(r);
        }
    }
    std::vector<SortSample> samples;
    PKBW_TRY(gather_samples(ctx, sorted, n, sort_rank, static_cast<long long>(active.size()), samples));
    const auto splitters = pkbw::tk::choose_splitters(samples, static_cast<long long>(active.size()));
    std::vector<long long> bounds;
    PKBW_TRY(bucket_bounds(ctx, sorted, n, sort_rank, splitters, bounds));
    std::vector<long long> send(static_cast<std::size_t>(world), 0);
    for (std::size_t b = 0; b < active.size(); ++b) {
        send[static_cast<std::size_t>(active[b])] = bounds[b + 1] - bounds[b];
    }
    const std::vector<long long> recv = pkbw::tk::exchange_counts(ctx, send);
    const long long received = pkbw::tk::total_of(recv);
    T* bucket = scratch_of<T>(ctx, "sort85_bucket", received);
    T* merged = scratch_of<T>(ctx, "sort85_merged", received);
    PKBW_TRY(pkbw::tk::all_to_all_v(ctx, ctx.nccl(), sorted, send.data(), bucket, recv.data(), sizeof(T)));
    PKBW_TRY(pkbw::tk::sort_keys(ctx, bucket, merged, received));
    const std::vector<long long> merged_sizes = pkbw::tk::gather_counts(ctx, received);
    long long start = 0;
    for (int r = 0; r < ctx.rank; ++r) {
        start += merged_sizes[static_cast<std::size_t>(r)];
    }
    const auto send_back =
        pkbw::tk::rebalance_counts(start, received, world, pkbw::tk::total_of(merged_sizes));
    const std::vector<long long> recv_back = pkbw::tk::exchange_counts(ctx, send_back);
    if (pkbw::tk::total_of(recv_back) != ctx.output(0).shape[0]) {
        return ctx.fail("85 reference: the rebalanced slice does not match the output's length");
    }
    return pkbw::tk::all_to_all_v(ctx, ctx.nccl(), merged, send_back.data(), ctx.output(0).data,
                                  recv_back.data(), sizeof(T));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::dispatch_sortable(ctx, ctx.input(0).dtype, "85 reference", [&](auto tag) {
        return sample_sort<typename decltype(tag)::type>(ctx);
    });
}
