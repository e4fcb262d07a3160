// Uneven all-gather on NCCL for references (pkbw reference toolkit): every rank's `mine` items
// concatenated in rank order, PKB's all_gather into per-rank chunks of different sizes followed by
// torch.cat (81's masks and scores). The counts come from the caller (a list param, or
// exchange_v.h's gather_counts); the host twin is all_gather_v_host.h.
//
//     PKBW_TRY(pkbw::tk::all_gather_v(ctx, ctx.nccl(), send, mine, recv, counts, item_bytes));
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"

#include <vector>

namespace pkbw::tk {

// tk::all_to_all_v with the same chunk (offset 0, `mine` items) to every peer of `comm`; counts has one
// entry per peer and counts[own index] must be `mine`.
inline int all_gather_v(const Context& ctx, ncclComm_t comm, const void* send, long long mine, void* recv,
                        const std::vector<long long>& counts, std::size_t item_bytes) {
    const std::vector<long long> send_counts(counts.size(), mine), send_offsets(counts.size(), 0);
    return all_to_all_v(ctx, comm, send, send_counts.data(), recv, counts.data(), item_bytes,
                        send_offsets.data());
}

} // namespace pkbw::tk
