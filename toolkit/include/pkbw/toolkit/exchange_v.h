// Variable-count exchanges (pkbw reference toolkit), host-side and backend-neutral: the counts step of
// an all-to-allv or all-gatherv, through ctx.all_gather_host (so it runs the same on cuda and host).
//
//     const auto recv_counts = pkbw::tk::exchange_counts(ctx, send_counts); // all_to_all_single's splits
//     const auto counts = pkbw::tk::gather_counts(ctx, my_rows);            // an uneven all_gather's sizes
//
// Offsets of packed chunks are sort_host.h's exclusive_scan.
// The data step follows with the grouped send/recv of tk::all_to_all_v (cuda) or tk::all_to_all_v_host;
// "all_to_all_single used as an all-gatherv" (69, 78) is exchange_counts with send_counts[p] = my_rows
// for every p. Collective: every rank calls each at the same point.
#pragma once

#include "pkbw/solution.h"

#include <vector>

namespace pkbw::tk {

// What every peer sends this rank: recv_counts[p] = peer p's send_counts[rank]. send_counts has one
// entry per rank.
inline std::vector<long long> exchange_counts(const Context& ctx, const std::vector<long long>& send_counts) {
    const int world = ctx.world_size;
    std::vector<long long> all(static_cast<std::size_t>(world) * world);
    ctx.all_gather_host(send_counts.data(), sizeof(long long) * static_cast<std::size_t>(world), all.data());
    std::vector<long long> recv(static_cast<std::size_t>(world));
    for (int p = 0; p < world; ++p) {
        recv[static_cast<std::size_t>(p)] = all[static_cast<std::size_t>(p) * world + ctx.rank];
    }
    return recv;
}

// Every rank's count of an all-gatherv, in rank order.
inline std::vector<long long> gather_counts(const Context& ctx, long long mine) {
    std::vector<long long> counts(static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(&mine, sizeof mine, counts.data());
    return counts;
}

// Per-peer counts and offsets (items) for tk::all_to_all_v when PKB rotates its chunk lists by the rank
// (65's and 66's _shift): to peer p goes chunk (p - rank) mod W of the send split, and what p sends lands
// in chunk (p - rank) mod W of the receive split; nothing is packed.
struct PeerSplits {
    std::vector<long long> send_counts, send_offsets, recv_counts, recv_offsets;
};

inline PeerSplits rotated_splits(int rank, const std::vector<long long>& send_split,
                                 const std::vector<long long>& recv_split) {
    const int world = static_cast<int>(send_split.size());
    PeerSplits out;
    long long send_at = 0, recv_at = 0;
    std::vector<long long> send_starts, recv_starts;
    for (int k = 0; k < world; ++k) {
        send_starts.push_back(send_at);
        recv_starts.push_back(recv_at);
        send_at += send_split[k];
        recv_at += recv_split[k];
    }
    for (int p = 0; p < world; ++p) {
        const int chunk = ((p - rank) % world + world) % world;
        out.send_counts.push_back(send_split[chunk]);
        out.send_offsets.push_back(send_starts[chunk]);
        out.recv_counts.push_back(recv_split[chunk]);
        out.recv_offsets.push_back(recv_starts[chunk]);
    }
    return out;
}

// A list param with one entry per rank (split sizes, key splits), or empty when it has another length.
inline std::vector<long long> rank_list(const Context& ctx, const char* name) {
    double values[kMaxRanks];
    if (ctx.param_list(name, values, kMaxRanks) != ctx.world_size) {
        return {};
    }
    return std::vector<long long>(values, values + ctx.world_size);
}

inline long long total_of(const std::vector<long long>& counts) {
    long long total = 0;
    for (long long c : counts) {
        total += c;
    }
    return total;
}

// Reports `rows` as the length of every output (docs/solution-abi.md "Variable-length outputs"): 67's
// ids and rows, which arrive together. Returns the first failure's code.
inline int set_output_lengths(const Context& ctx, long long rows) {
    for (int i = 0; i < ctx.num_outputs; ++i) {
        if (const int rc = ctx.set_output_length(i, rows)) {
            return rc;
        }
    }
    return 0;
}

} // namespace pkbw::tk
