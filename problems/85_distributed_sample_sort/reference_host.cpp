// Host oracle for PKB problem 85: whatever the splitters, a sample sort followed by the exact rebalance
// returns the r-th slice of the ascending global sort, so the oracle gathers every shard (the sizes
// first, tk::gather_counts; the data by tk::all_gather_v_host), sorts the values as doubles (exact for
// every floating dtype) and keeps tk::balanced_range(rank).
#include "pkbw/solution.h"
#include "pkbw/toolkit/all_gather_v_host.h"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/sample_sort.h"

#include <algorithm>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& shard = ctx.input(0);
    const long long n = shard.numel();
    const std::vector<double> mine = pkbw::tk::to_f64(shard);
    const std::vector<long long> sizes = pkbw::tk::gather_counts(ctx, n);
    const long long total = pkbw::tk::total_of(sizes);
    const std::vector<std::byte> bytes =
        pkbw::tk::all_gather_v_host(ctx, mine.data(), n, sizes, sizeof(double));
    std::vector<double> all(bytes.size() / sizeof(double));
    std::copy_n(reinterpret_cast<const double*>(bytes.data()), all.size(), all.data());
    if (static_cast<long long>(all.size()) != total) {
        return ctx.fail("85 oracle: the gathered shards do not add up to the gathered sizes");
    }
    std::sort(all.begin(), all.end());
    const pkbw::tk::IndexRange slice = pkbw::tk::balanced_range(ctx.rank, ctx.world_size, total);
    if (slice.size() != ctx.output(0).numel()) {
        return ctx.fail("85 oracle: the output's length is not this rank's slice of the global sort");
    }
    for (long long i = 0; i < slice.size(); ++i) {
        pkbw::tk::store(ctx.output(0), i, all[static_cast<std::size_t>(slice.begin + i)]);
    }
    return 0;
}
