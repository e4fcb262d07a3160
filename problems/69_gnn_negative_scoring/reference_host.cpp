// Host oracle for PKB problem 69: PKB's steps on the host: the row counts (tk::gather_counts), each
// rank's scores repeated once per peer and sent with tk::all_to_all_v_host (all_to_all_single as an
// all-gatherv, as PKB calls it), then the ranks by positive_rank_host.h's rule in double.
#include "pkbw/solution.h"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/positive_rank_host.h"

#include <cstring>
#include <vector>

namespace {

// data (rows of row_bytes) from every rank, in rank order: PKB's _broadcast_data.
std::vector<std::byte> gather_rows(const pkbw::Context& ctx, const void* data, long long rows,
                                   std::size_t row_bytes) {
    const int world = ctx.world_size;
    const std::size_t bytes = static_cast<std::size_t>(rows) * row_bytes;
    std::vector<std::byte> repeated(bytes * static_cast<std::size_t>(world));
    for (int p = 0; p < world && bytes > 0; ++p) {
        std::memcpy(repeated.data() + bytes * static_cast<std::size_t>(p), data, bytes);
    }
    const std::vector<long long> send_counts(static_cast<std::size_t>(world), rows);
    return pkbw::tk::all_to_all_v_host(ctx, repeated.data(), send_counts, row_bytes);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& pos = ctx.input(0);
    const pkbw::TensorView& neg = ctx.input(1);
    const long long negatives = neg.shape[1];
    const std::size_t elem = pkbw::element_size(pos.dtype);
    const long long rows = pkbw::tk::total_of(pkbw::tk::gather_counts(ctx, pos.shape[0]));
    if (rows != ctx.output(0).shape[0]) {
        return ctx.fail("69 oracle: the gathered rows differ from the output's length");
    }
    const std::vector<std::byte> all_pos = gather_rows(ctx, pos.data, pos.shape[0], elem);
    const std::vector<std::byte> all_neg = gather_rows(ctx, neg.data, pos.shape[0], elem * negatives);
    const pkbw::tk::PositiveRanks ranks = pkbw::tk::positive_ranks_f64(
        pos.dtype, pkbw::tk::to_f64(all_pos.data(), pos.dtype, rows),
        pkbw::tk::to_f64(all_neg.data(), pos.dtype, rows * negatives), negatives);
    std::memcpy(ctx.output(0).data, ranks.ranks.data(), sizeof(long long) * static_cast<std::size_t>(rows));
    return 0;
}
