// Host equivalent of moe_exchange.cuh: PKB's MoE count exchange and the variable all-to-all of rows
// within the expert-parallel group (null group: the world), over ctx.all_gather_host. Every rank calls
// each function at the same point (each with its own group of one layout).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/moe_splits.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace pkbw::tk {

namespace moe_exchange_host_detail {

inline void gather(const Context& ctx, const SubComm* group, const void* send, std::size_t bytes,
                   void* recv) {
    if (group)
        ctx.all_gather_host(*group, send, bytes, recv);
    else
        ctx.all_gather_host(send, bytes, recv);
}

} // namespace moe_exchange_host_detail

// counts: this rank's [experts] token counts. Throws std::invalid_argument when experts is not a
// multiple of the group size (the oracle turns it into ctx.fail).
inline MoeSplits moe_exchange_counts_host(const Context& ctx, const SubComm* group,
                                          const std::vector<long long>& counts) {
    const int size = group ? group->size : ctx.world_size, rank = group ? group->rank : ctx.rank;
    const int experts = static_cast<int>(counts.size());
    std::vector<long long> all(counts.size() * static_cast<std::size_t>(size));
    moe_exchange_host_detail::gather(ctx, group, counts.data(), counts.size() * sizeof(long long),
                                     all.data());
    MoeSplits splits;
    const std::string why = moe_splits_from_counts(all, size, rank, experts, splits);
    if (!why.empty())
        throw std::invalid_argument(why);
    return splits;
}

// Variable all-to-all of items within the group: chunk p of send (send_counts[p] items of item_bytes,
// packed in peer order) goes to group rank p; returns what this rank receives, packed by source.
inline std::vector<std::byte> all_to_all_v_group_host(const Context& ctx, const SubComm* group,
                                                      const void* send,
                                                      const std::vector<long long>& send_counts,
                                                      std::size_t item_bytes) {
    const int size = group ? group->size : ctx.world_size, rank = group ? group->rank : ctx.rank;
    std::vector<long long> counts(static_cast<std::size_t>(size) * size);
    moe_exchange_host_detail::gather(ctx, group, send_counts.data(), sizeof(long long) * size, counts.data());
    long long largest = 0;
    for (int r = 0; r < size; ++r) {
        long long total = 0;
        for (int p = 0; p < size; ++p)
            total += counts[static_cast<std::size_t>(r) * size + p];
        largest = total > largest ? total : largest;
    }
    // Everyone's whole send buffer, padded to the largest (at least one byte so every rank sends).
    const std::size_t stride = static_cast<std::size_t>(largest) * item_bytes + 1;
    std::vector<std::byte> mine(stride), all(stride * static_cast<std::size_t>(size));
    long long own = 0;
    for (int p = 0; p < size; ++p)
        own += send_counts[p];
    if (own > 0)
        std::memcpy(mine.data(), send, static_cast<std::size_t>(own) * item_bytes);
    moe_exchange_host_detail::gather(ctx, group, mine.data(), stride, all.data());
    std::vector<std::byte> recv;
    for (int r = 0; r < size; ++r) {
        long long offset = 0;
        for (int p = 0; p < rank; ++p)
            offset += counts[static_cast<std::size_t>(r) * size + p];
        const std::byte* chunk = all.data() + static_cast<std::size_t>(r) * stride + offset * item_bytes;
        recv.insert(recv.end(), chunk,
                    chunk + counts[static_cast<std::size_t>(r) * size + rank] * item_bytes);
    }
    return recv;
}

// Rows of doubles there and back (the oracle keeps its rows as double: 8-byte items of `width`).
inline std::vector<double> moe_dispatch_host(const Context& ctx, const SubComm* group, const MoeSplits& s,
                                             const std::vector<double>& rows, std::int64_t width) {
    const std::vector<std::byte> got =
        all_to_all_v_group_host(ctx, group, rows.data(), s.input_splits, sizeof(double) * width);
    std::vector<double> out(got.size() / sizeof(double));
    if (!out.empty())
        std::memcpy(out.data(), got.data(), got.size());
    return out;
}
inline std::vector<double> moe_combine_host(const Context& ctx, const SubComm* group, const MoeSplits& s,
                                            const std::vector<double>& rows, std::int64_t width) {
    const std::vector<std::byte> got =
        all_to_all_v_group_host(ctx, group, rows.data(), s.output_splits, sizeof(double) * width);
    std::vector<double> out(got.size() / sizeof(double));
    if (!out.empty())
        std::memcpy(out.data(), got.data(), got.size());
    return out;
}

} // namespace pkbw::tk
