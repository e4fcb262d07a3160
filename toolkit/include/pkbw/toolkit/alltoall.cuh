// All-to-all with per-peer counts on NCCL for references (pkbw reference toolkit): one
// ncclGroupStart/End of ncclSend/ncclRecv pairs, PKB's all_to_all_single with split lists and its list
// all_to_all (chunks packed in peer order). Works on any communicator: ctx.nccl() or a sub-comm.
//
//     PKBW_TRY(pkbw::tk::all_to_all(ctx, ctx.nccl(), in.data, out.data, in.nbytes() / W));
//     PKBW_TRY(pkbw::tk::all_to_all_v(ctx, comm, send, send_counts, recv, recv_counts, row_bytes));
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"

#include <cstddef>
#include <vector>

namespace pkbw::tk {

// Chunk p of `send` (send_counts[p] items of item_bytes, at send_offsets[p] items, or packed in peer
// order when send_offsets is null) goes to peer p of `comm`; chunk p of `recv` (recv_counts[p] items,
// at recv_offsets[p] or packed) comes from peer p. Counts and offsets have one entry per peer of the
// communicator. Zero-sized chunks are skipped. Bytes move unchanged, so any dtype goes through.
inline int all_to_all_v(const Context& ctx, ncclComm_t comm, const void* send, const long long* send_counts,
                        void* recv, const long long* recv_counts, std::size_t item_bytes,
                        const long long* send_offsets = nullptr, const long long* recv_offsets = nullptr) {
    int peers = 0;
    PKBW_CHECK(ctx, ncclCommCount(comm, &peers));
    const char* from = static_cast<const char*>(send);
    char* to = static_cast<char*>(recv);
    PKBW_CHECK(ctx, ncclGroupStart());
    ncclResult_t rc = ncclSuccess;
    long long send_at = 0, recv_at = 0;
    for (int p = 0; p < peers && rc == ncclSuccess; ++p) {
        const long long s_off = send_offsets ? send_offsets[p] : send_at;
        const long long r_off = recv_offsets ? recv_offsets[p] : recv_at;
        if (send_counts[p] > 0)
            rc = ncclSend(from + s_off * item_bytes, static_cast<std::size_t>(send_counts[p]) * item_bytes,
                          ncclUint8, p, comm, ctx.stream());
        if (rc == ncclSuccess && recv_counts[p] > 0)
            rc = ncclRecv(to + r_off * item_bytes, static_cast<std::size_t>(recv_counts[p]) * item_bytes,
                          ncclUint8, p, comm, ctx.stream());
        send_at += send_counts[p];
        recv_at += recv_counts[p];
    }
    const ncclResult_t end = ncclGroupEnd();
    PKBW_CHECK(ctx, rc);
    PKBW_CHECK(ctx, end);
    return 0;
}

// Equal chunks: chunk p (chunk_bytes) of send to peer p, chunk p of recv from peer p.
inline int all_to_all(const Context& ctx, ncclComm_t comm, const void* send, void* recv,
                      std::size_t chunk_bytes) {
    int peers = 0;
    PKBW_CHECK(ctx, ncclCommCount(comm, &peers));
    const std::vector<long long> counts(static_cast<std::size_t>(peers), static_cast<long long>(chunk_bytes));
    return all_to_all_v(ctx, comm, send, counts.data(), recv, counts.data(), 1);
}

} // namespace pkbw::tk
