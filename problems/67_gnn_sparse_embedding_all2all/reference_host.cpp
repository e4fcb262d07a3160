// Host oracle for PKB problem 67: the stable partition by owner (idx % W) with the toolkit's host sort
// and histogram, then tk::all_to_all_v_host of the ids and of the rows (its counts exchange first); K,
// what arrives, is reported as both outputs' length.
#include "pkbw/solution.h"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/sort_host.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int world = ctx.world_size;
    const pkbw::TensorView& idx = ctx.input(0);
    const long long n = idx.shape[0];
    const auto* ids = idx.as<const long long>();
    const std::size_t row_bytes = ctx.input(1).nbytes() / static_cast<std::size_t>(n > 0 ? n : 1);
    std::vector<std::byte> recv_ids, recv_rows;
    if (world == 1) { // PKB returns its inputs
        recv_ids.assign(static_cast<const std::byte*>(idx.data),
                        static_cast<const std::byte*>(idx.data) + idx.nbytes());
        recv_rows.assign(static_cast<const std::byte*>(ctx.input(1).data),
                         static_cast<const std::byte*>(ctx.input(1).data) + ctx.input(1).nbytes());
    } else {
        std::vector<int> owner(static_cast<std::size_t>(n));
        for (long long i = 0; i < n; ++i) {
            if (ids[i] < 0) {
                return ctx.fail("67 oracle: a negative id");
            }
            owner[static_cast<std::size_t>(i)] = static_cast<int>(ids[i] % world);
        }
        const std::vector<long long> perm = pkbw::tk::stable_argsort_by_key(owner.data(), n);
        std::vector<long long> counts;
        pkbw::tk::histogram(owner.data(), n, world, counts);
        std::vector<long long> send_ids(static_cast<std::size_t>(n));
        std::vector<unsigned char> send_rows(static_cast<std::size_t>(n) * row_bytes);
        pkbw::tk::gather_rows_host(ids, sizeof(long long), perm, send_ids.data());
        pkbw::tk::gather_rows_host(ctx.input(1).data, row_bytes, perm, send_rows.data());
        recv_ids = pkbw::tk::all_to_all_v_host(ctx, send_ids.data(), counts, sizeof(long long));
        recv_rows = pkbw::tk::all_to_all_v_host(ctx, send_rows.data(), counts, row_bytes);
    }
    const long long k = static_cast<long long>(recv_ids.size() / sizeof(long long));
    if (k > ctx.output(0).shape[0]) {
        return ctx.fail("67 oracle: more rows arrive than the outputs' bound");
    }
    std::memcpy(ctx.output(0).data, recv_ids.data(), recv_ids.size());
    std::memcpy(ctx.output(1).data, recv_rows.data(), recv_rows.size());
    return pkbw::tk::set_output_lengths(ctx, k);
}
