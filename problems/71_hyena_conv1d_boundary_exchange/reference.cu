// Reference for PKB problem 71: the last K-1 samples of chunks a and b packed (tk::strided_copy), a
// ncclSend/ncclRecv group with the neighbours (a-tail to r+1, b-tail to r-1), PKB's edge rules (zeros
// on rank 0, the own a-tail on the last rank), then the toolkit's depthwise causal conv on each chunk.
#include "pkbw/solution.h"
#include "pkbw/toolkit/depthwise_conv.cuh"
#include "pkbw/toolkit/permute.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    const int rank = ctx.rank, world = ctx.world_size;
    const long long rows = x.shape[0] * x.shape[1], len = x.shape[2] / 2, taps = w.shape[2], pad = taps - 1;
    const std::size_t es = pkbw::element_size(x.dtype),
                      tail_bytes = static_cast<std::size_t>(rows * pad) * es;
    char* tails = static_cast<char*>(ctx.scratch("conv71_tails", 2 * tail_bytes)); // a-tail, b-tail
    char* prev_a = static_cast<char*>(ctx.scratch("conv71_prev_a", tail_bytes));
    char* next_b = static_cast<char*>(ctx.scratch("conv71_next_b", tail_bytes));
    tk::StridedCopy tail;
    tail.ndim = 2;
    tail.elem_bytes = es;
    tail.shape[0] = rows;
    tail.shape[1] = pad;
    tail.strides[0] = 2 * len;
    tail.strides[1] = 1;
    const char* data = static_cast<const char*>(x.data);
    PKBW_TRY(tk::strided_copy(ctx, data + (len - pad) * es, tails, tail));
    PKBW_TRY(tk::strided_copy(ctx, data + (2 * len - pad) * es, tails + tail_bytes, tail));

    PKBW_CHECK(ctx, ncclGroupStart());
    ncclResult_t rc = ncclSuccess;
    if (rank > 0) {
        rc = ncclRecv(prev_a, tail_bytes, ncclUint8, rank - 1, ctx.nccl(), ctx.stream());
        if (rc == ncclSuccess)
            rc = ncclSend(tails + tail_bytes, tail_bytes, ncclUint8, rank - 1, ctx.nccl(), ctx.stream());
    }
    if (rc == ncclSuccess && rank < world - 1) {
        rc = ncclSend(tails, tail_bytes, ncclUint8, rank + 1, ctx.nccl(), ctx.stream());
        if (rc == ncclSuccess)
            rc = ncclRecv(next_b, tail_bytes, ncclUint8, rank + 1, ctx.nccl(), ctx.stream());
    }
    const ncclResult_t end = ncclGroupEnd();
    PKBW_CHECK(ctx, rc);
    PKBW_CHECK(ctx, end);
    if (rank == 0)
        PKBW_CHECK(ctx, cudaMemsetAsync(prev_a, 0, tail_bytes, ctx.stream()));
    if (rank == world - 1)
        PKBW_CHECK(ctx, cudaMemcpyAsync(next_b, tails, tail_bytes, cudaMemcpyDeviceToDevice, ctx.stream()));

    tk::DepthwiseConv cv;
    cv.rows = rows;
    cv.channels = w.shape[0];
    cv.length = len;
    cv.taps = taps;
    cv.row_stride = 2 * len;
    PKBW_TRY(tk::dispatch_float(ctx, x.dtype, "71 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* xs = x.as<T>();
        T* y = ctx.output(0).as<T>();
        PKBW_TRY(tk::depthwise_causal_conv<T>(ctx, cv, xs, reinterpret_cast<const T*>(prev_a), w.as<T>(), y));
        return tk::depthwise_causal_conv<T>(ctx, cv, xs + len, reinterpret_cast<const T*>(next_b), w.as<T>(),
                                            y + len);
    }));
    return tk::finish(ctx);
}
