// Reference for PKB problem 66: one tk::all_to_all_v whose per-peer offsets express PKB's rotated lists
// (as 65's: to peer p this rank sends its chunk (p - rank) mod W and receives into chunk (p - rank) mod W,
// nothing packed), then tk::scatter_add_rows of the received rows into the zeroed output by seed id
// (float atomics: the order of a seed's additions is not fixed, unlike PKB's coalesced sparse mm).
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/sort.cuh"

#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const std::vector<long long> sent = pkbw::tk::rank_list(ctx, "counts_sent");
    const std::vector<long long> received = pkbw::tk::rank_list(ctx, "counts_received");
    if (sent.empty() || received.empty()) {
        return ctx.fail("66 reference: counts_sent and counts_received need one entry per rank");
    }
    const pkbw::TensorView& grad = ctx.input(0);
    const long long hidden = grad.shape[1], rows = grad.shape[0];
    const pkbw::tk::PeerSplits split = pkbw::tk::rotated_splits(ctx.rank, sent, received);
    auto* got = static_cast<float*>(ctx.scratch("gnn66_rows", sizeof(float) * rows * hidden));
    PKBW_TRY(pkbw::tk::all_to_all_v(ctx, ctx.nccl(), grad.data, split.send_counts.data(), got,
                                    split.recv_counts.data(), sizeof(float) * hidden,
                                    split.send_offsets.data(), split.recv_offsets.data()));
    PKBW_CHECK(ctx, cudaMemsetAsync(ctx.output(0).data, 0, ctx.output(0).nbytes(), ctx.stream()));
    return pkbw::tk::scatter_add_rows(ctx, got, hidden, ctx.input(1).as<const long long>(), rows,
                                      ctx.output(0).as<float>());
}
