// PKB's MoE token exchange on NCCL for references (pkbw reference toolkit): the count exchange that
// becomes host split lists (moe_splits.h), then the variable all-to-all of rows there (dispatch) and
// back (combine), within an expert-parallel group: the world (31, 32, 49, 50) or a sub-communicator
// (51's contiguous EP groups).
//
//     const pkbw::tk::EpComm ep = pkbw::tk::ep_world(ctx);     // or ep_group(ctx.sub_comm_blocks(E))
//     pkbw::tk::MoeSplits splits;
//     PKBW_TRY(pkbw::tk::moe_exchange_counts(ctx, ep, counts, experts, splits));
//     PKBW_TRY(pkbw::tk::moe_dispatch(ctx, ep, splits, permuted, received, row_bytes));
//     ... the expert MLP on splits.received() rows ...
//     PKBW_TRY(pkbw::tk::moe_combine(ctx, ep, splits, expert_out, returned, row_bytes));
//
// The counts go through ncclAllGather and one device-to-host copy; the call waits for the stream there
// (PKB's `.tolist()` synchronises too), because NCCL's send/recv sizes are host values.
// Scratch: "pkbw_tk_moe_counts" (ep_size × experts int64).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/moe_splits.h"

#include <string>
#include <vector>

namespace pkbw::tk {

// The expert-parallel group: a communicator with this rank's index and the group size.
struct EpComm {
    ncclComm_t comm = nullptr;
    int rank = 0;
    int size = 1;
};
inline EpComm ep_world(const Context& ctx) {
    return {ctx.nccl(), ctx.rank, ctx.world_size};
}
inline EpComm ep_group(const SubComm& group) {
    return {group.nccl(), group.rank, group.size};
}

// counts: [experts] int64 on the device (this rank's tokens per expert). Fills `splits` on the host.
inline int moe_exchange_counts(const Context& ctx, const EpComm& ep, const long long* counts, int experts,
                               MoeSplits& splits) {
    const std::size_t n = static_cast<std::size_t>(experts);
    long long* gathered = static_cast<long long*>(
        ctx.scratch("pkbw_tk_moe_counts", n * static_cast<std::size_t>(ep.size) * sizeof(long long)));
    PKBW_CHECK(ctx, ncclAllGather(counts, gathered, n, ncclInt64, ep.comm, ctx.stream()));
    std::vector<long long> all(n * static_cast<std::size_t>(ep.size));
    PKBW_CHECK(ctx, cudaMemcpyAsync(all.data(), gathered, all.size() * sizeof(long long),
                                    cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    const std::string why = moe_splits_from_counts(all, ep.size, ep.rank, experts, splits);
    if (!why.empty())
        return ctx.fail(("moe_exchange_counts: " + why).c_str());
    return 0;
}

// send: splits.sent() rows (expert-major, so packed by destination); recv: splits.received() rows,
// packed by source rank.
inline int moe_dispatch(const Context& ctx, const EpComm& ep, const MoeSplits& splits, const void* send,
                        void* recv, std::size_t row_bytes) {
    return all_to_all_v(ctx, ep.comm, send, splits.input_splits.data(), recv, splits.output_splits.data(),
                        row_bytes);
}

// The way back: send splits.received() rows packed by source rank, recv splits.sent() rows.
inline int moe_combine(const Context& ctx, const EpComm& ep, const MoeSplits& splits, const void* send,
                       void* recv, std::size_t row_bytes) {
    return all_to_all_v(ctx, ep.comm, send, splits.output_splits.data(), recv, splits.input_splits.data(),
                        row_bytes);
}

} // namespace pkbw::tk
