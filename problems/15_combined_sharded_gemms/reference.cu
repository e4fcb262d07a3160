// Reference for PKB problem 15, following PKB's data flow: ncclAllGather of the x shards, a permute
// into x [Mr, H], GEMM 1 over all rows (as PKB), SiLU in place, GEMM 2 on this rank's row block
// written into a zeroed [Mr, H] buffer, ncclReduceScatter (sum) of that buffer.
#include "pkbw/solution.h"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/permute.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

using pkbw::tk::from_float;
using pkbw::tk::to_float;

template <class T>
__global__ void silu_inplace(T* a, long long count) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        const float v = to_float(a[i]);
        a[i] = from_float<T>(v / (1.0f + expf(-v)));
    }
}

template <class T>
int run(const pkbw::Context& ctx) {
    const pkbw::TensorView& x_local = ctx.input(0);
    const pkbw::TensorView& w1 = ctx.input(1);
    const pkbw::TensorView& w2 = ctx.input(2);
    const pkbw::TensorView& out = ctx.output(0);
    const pkbw::DType dt = x_local.dtype;
    const int world = ctx.world_size;
    const long long rows = x_local.shape[0], hl = x_local.shape[1], hidden = w1.shape[0], f = w1.shape[1];
    const long long rows_local = rows / world;
    T* gathered = static_cast<T*>(ctx.scratch("csg_gathered", x_local.nbytes() * world));
    T* x = static_cast<T*>(ctx.scratch("csg_x", x_local.nbytes() * world));
    T* a = static_cast<T*>(ctx.scratch("csg_a", static_cast<std::size_t>(rows * f) * sizeof(T)));
    T* buf = static_cast<T*>(ctx.scratch("csg_buf", static_cast<std::size_t>(rows * hidden) * sizeof(T)));
    PKBW_CHECK(ctx,
               ncclAllGather(x_local.data, gathered, x_local.nbytes(), ncclUint8, ctx.nccl(), ctx.stream()));
    // [W, Mr, H/W] -> [Mr, W, H/W] = x [Mr, H]
    const long long shape[] = {world, rows, hl};
    const int perm[] = {1, 0, 2};
    PKBW_TRY(pkbw::tk::permute(ctx, gathered, x, sizeof(T), 3, shape, perm));
    PKBW_TRY(pkbw::tk::matmul(ctx, dt, rows, f, hidden, x, w1.data, a));
    silu_inplace<T><<<pkbw::tk::grid_for(rows * f), 256, 0, ctx.stream()>>>(a, rows * f);
    PKBW_CHECK(ctx,
               cudaMemsetAsync(buf, 0, static_cast<std::size_t>(rows * hidden) * sizeof(T), ctx.stream()));
    const long long first = ctx.rank * rows_local;
    PKBW_TRY(pkbw::tk::matmul(ctx, dt, rows_local, hidden, f, a + first * f, w2.data, buf + first * hidden));
    PKBW_CHECK(ctx, ncclReduceScatter(buf, out.data, static_cast<size_t>(out.numel()),
                                      pkbw::nccl_dtype(out.dtype), ncclSum, ctx.nccl(), ctx.stream()));
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    PKBW_TRY(pkbw::tk::dispatch_float(ctx, ctx.input(0).dtype, "15_combined_sharded_gemms reference",
                                      [&](auto tag) { return run<typename decltype(tag)::type>(ctx); }));
    return pkbw::tk::finish(ctx);
}
