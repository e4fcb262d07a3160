// Host oracle for PKB problem 68: owner = min(id / S, W - 1), the stable partition by owner with the
// toolkit's host sort and histogram, tk::all_to_all_v_host of the ids (its counts exchange first), the
// owner's rows read at id - rank·S (only the fetched rows are touched), tk::all_to_all_v_host of the rows
// back, the rows put back in query order, and the projection in double rounded once to D.
#include "pkbw/solution.h"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/sort_host.h"

#include <algorithm>
#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& table = ctx.input(0);
    const pkbw::TensorView& ids = ctx.input(1);
    const int world = ctx.world_size;
    const long long shard = table.shape[0], embed = table.shape[1], queries = ids.shape[0];
    const std::size_t row_bytes = static_cast<std::size_t>(embed) * pkbw::element_size(table.dtype);
    const auto* id = ids.as<const long long>();
    std::vector<int> owner(static_cast<std::size_t>(queries));
    for (long long i = 0; i < queries; ++i) {
        if (id[i] < 0) {
            return ctx.fail("68 oracle: a negative node id");
        }
        owner[static_cast<std::size_t>(i)] =
            static_cast<int>(std::min(id[i] / shard, static_cast<long long>(world - 1)));
    }
    const std::vector<long long> perm = tk::stable_argsort_by_key(owner.data(), queries);
    std::vector<long long> send_counts;
    tk::histogram(owner.data(), queries, world, send_counts);
    std::vector<long long> send_ids(static_cast<std::size_t>(queries));
    tk::gather_rows_host(id, sizeof(long long), perm, send_ids.data());
    const std::vector<long long> recv_counts = tk::exchange_counts(ctx, send_counts);
    const std::vector<std::byte> recv_bytes =
        tk::all_to_all_v_host(ctx, send_ids.data(), send_counts, sizeof(long long));

    std::vector<long long> local(recv_bytes.size() / sizeof(long long));
    std::memcpy(local.data(), recv_bytes.data(), recv_bytes.size());
    for (long long& row : local) {
        row -= ctx.rank * shard;
        if (row < 0 || row >= shard) {
            return ctx.fail("68 oracle: a requested id is outside this rank's shard");
        }
    }
    std::vector<unsigned char> fetched(local.size() * row_bytes);
    tk::gather_rows_host(table.data, row_bytes, local, fetched.data());
    const std::vector<std::byte> back = tk::all_to_all_v_host(ctx, fetched.data(), recv_counts, row_bytes);

    // back holds the rows in send order: row t answers query perm[t].
    std::vector<std::byte> emb(back.size());
    for (long long t = 0; t < queries; ++t) {
        std::memcpy(emb.data() + static_cast<std::size_t>(perm[static_cast<std::size_t>(t)]) * row_bytes,
                    back.data() + static_cast<std::size_t>(t) * row_bytes, row_bytes);
    }
    const std::vector<double> rows = tk::to_f64(emb.data(), table.dtype, queries * embed);
    tk::store_all(ctx.output(0),
                  tk::gemm_rounded(rows, tk::to_f64(ctx.input(2)), queries, embed, embed, table.dtype));
    return 0;
}
