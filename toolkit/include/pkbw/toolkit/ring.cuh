// One step of a ring inside a sub-communicator for references (pkbw reference toolkit; PKB's
// RingComm.send_recv + commit + wait in 54-57, and 56's pipeline send/recv): every buffer's `send`
// goes to the next rank of the group and `recv` is filled from the previous one, as one NCCL group on
// ctx.stream(). `send_on` / `recv_on` switch a direction off (a pipeline's first and last stages).
//
//     const pkbw::tk::RingBuffer kv[] = {{k, k_next, bytes}, {v, v_next, bytes}};
//     PKBW_TRY(pkbw::tk::ring_shift(ctx, cp, kv, 2));
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"

#include <cstddef>

namespace pkbw::tk {

struct RingBuffer {
    const void* send;
    void* recv;
    std::size_t bytes;
};

inline int ring_shift(const Context& ctx, const SubComm& group, const RingBuffer* buffers, int count,
                      bool send_on = true, bool recv_on = true) {
    if (group.size < 2)
        return 0;
    const int next = (group.rank + 1) % group.size;
    const int prev = (group.rank + group.size - 1) % group.size;
    PKBW_CHECK(ctx, ncclGroupStart());
    ncclResult_t rc = ncclSuccess;
    for (int i = 0; i < count && rc == ncclSuccess; ++i) {
        if (send_on)
            rc = ncclSend(buffers[i].send, buffers[i].bytes, ncclUint8, next, group.nccl(), ctx.stream());
        if (rc == ncclSuccess && recv_on)
            rc = ncclRecv(buffers[i].recv, buffers[i].bytes, ncclUint8, prev, group.nccl(), ctx.stream());
    }
    const ncclResult_t end = ncclGroupEnd();
    PKBW_CHECK(ctx, rc);
    PKBW_CHECK(ctx, end);
    return 0;
}

} // namespace pkbw::tk
