// Uneven all-gather on the host (pkbw reference toolkit): the host twin of all_gather_v.cuh, every rank's
// `mine` items concatenated in rank order, through ctx.all_gather_host (each rank's chunk padded to the
// largest count). Collective: every rank calls it at the same point with the same counts.
#pragma once

#include "pkbw/solution.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

namespace pkbw::tk {

inline std::vector<std::byte> all_gather_v_host(const Context& ctx, const void* send, long long mine,
                                                const std::vector<long long>& counts,
                                                std::size_t item_bytes) {
    const long long largest = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
    const std::size_t stride = static_cast<std::size_t>(largest) * item_bytes;
    std::vector<std::byte> padded(std::max<std::size_t>(stride, 1)), all(padded.size() * counts.size());
    if (mine > 0) { // counts[rank] == mine is the caller's to check; never more than a chunk holds
        std::memcpy(padded.data(), send, static_cast<std::size_t>(std::min(mine, largest)) * item_bytes);
    }
    ctx.all_gather_host(padded.data(), padded.size(), all.data());
    std::vector<std::byte> out;
    for (std::size_t r = 0; r < counts.size(); ++r) {
        const std::byte* chunk = all.data() + r * padded.size();
        out.insert(out.end(), chunk, chunk + static_cast<std::size_t>(counts[r]) * item_bytes);
    }
    return out;
}

} // namespace pkbw::tk
