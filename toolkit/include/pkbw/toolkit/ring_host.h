// Host twin of ring.cuh for the oracles: what one ring step delivers, over ctx.all_gather_host within
// the group. Every rank of the group calls it at once with the same byte count.
#pragma once

#include "pkbw/solution.h"

#include <cstddef>
#include <cstring>
#include <vector>

namespace pkbw::tk {

// The bytes the previous rank of `group` sent (this rank's `send` goes to the next one).
inline std::vector<std::byte> ring_shift_host(const Context& ctx, const SubComm& group, const void* send,
                                              std::size_t bytes) {
    std::vector<std::byte> all(bytes * static_cast<std::size_t>(group.size));
    ctx.all_gather_host(group, send, bytes, all.data());
    const int prev = (group.rank + group.size - 1) % group.size;
    return std::vector<std::byte>(all.begin() + prev * bytes, all.begin() + (prev + 1) * bytes);
}

// The same for doubles: the previous rank's values.
inline std::vector<double> ring_shift_f64(const Context& ctx, const SubComm& group,
                                          const std::vector<double>& send) {
    const std::vector<std::byte> got = ring_shift_host(ctx, group, send.data(), send.size() * sizeof(double));
    std::vector<double> values(send.size());
    std::memcpy(values.data(), got.data(), got.size());
    return values;
}

} // namespace pkbw::tk
