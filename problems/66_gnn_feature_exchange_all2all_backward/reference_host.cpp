// Host oracle for PKB problem 66: 65's rotated exchange of grad_output through tk::all_to_all_v_host
// (to peer p this rank sends its chunk (p - rank) mod W of the counts_sent split; what arrives from p is
// chunk (p - rank) mod W of the counts_received split), then the received rows summed per seed id in
// double, in row order, rounded to f32 once (PKB's coalesced sparse mm sums each seed's rows in order).
#include "pkbw/solution.h"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/host.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int world = ctx.world_size, me = ctx.rank;
    const std::vector<long long> sent = pkbw::tk::rank_list(ctx, "counts_sent");
    const std::vector<long long> received = pkbw::tk::rank_list(ctx, "counts_received");
    if (sent.empty() || received.empty()) {
        return ctx.fail("66 oracle: counts_sent and counts_received need one entry per rank");
    }
    const long long hidden = ctx.input(0).shape[1], rows = ctx.input(0).shape[0];
    const std::size_t row_bytes = sizeof(float) * static_cast<std::size_t>(hidden);
    // The received rows land where tk::all_to_all_v would put them (its offsets), from the packed reply.
    const pkbw::tk::PeerSplits split = pkbw::tk::rotated_splits(me, sent, received);
    const auto* grad = ctx.input(0).as<const float>();
    std::vector<float> send;
    for (int p = 0; p < world; ++p) {
        const float* chunk = grad + split.send_offsets[p] * hidden;
        send.insert(send.end(), chunk, chunk + split.send_counts[p] * hidden);
    }
    const std::vector<std::byte> got =
        pkbw::tk::all_to_all_v_host(ctx, send.data(), split.send_counts, row_bytes);
    std::vector<float> rows_in(static_cast<std::size_t>(rows * hidden));
    std::size_t from = 0;
    for (int p = 0; p < world; ++p) {
        const std::size_t bytes = static_cast<std::size_t>(split.recv_counts[p]) * row_bytes;
        std::memcpy(rows_in.data() + split.recv_offsets[p] * hidden, got.data() + from, bytes);
        from += bytes;
    }
    const auto* ids = ctx.input(1).as<const long long>();
    const long long seeds = ctx.output(0).shape[0];
    std::vector<double> sums(static_cast<std::size_t>(seeds * hidden), 0.0);
    for (long long t = 0; t < rows; ++t) {
        if (ids[t] < 0 || ids[t] >= seeds) {
            return ctx.fail("66 oracle: a seed id is outside [0, seed_size)");
        }
        for (long long h = 0; h < hidden; ++h) {
            sums[ids[t] * hidden + h] += rows_in[t * hidden + h];
        }
    }
    float* out = ctx.output(0).as<float>();
    for (std::size_t i = 0; i < sums.size(); ++i) {
        out[i] = static_cast<float>(sums[i]);
    }
    return 0;
}
