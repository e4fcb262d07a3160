// Reference for PKB problem 48: ncclAllGather of the W1/W2/W3 blocks over the FSDP communicator
// (ranks n_tp apart); the W1/W2 stacks are their dim-0 concatenation as they are, W3's is permuted
// into its dim-1 concatenation. x1 = x W1, x2 = x W2 (cuBLAS, fp32 accumulation, rounded to D),
// z = silu(x1) * x2 with PyTorch's two roundings, y = z W3, then ncclAllReduce over the TP
// communicator (n_tp consecutive ranks).
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/permute.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

template <class T>
__global__ void silu_times(T* x1_to_z, const T* x2, long long count) {
    using namespace pkbw::tk;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        const float a = to_float(x1_to_z[i]);
        const float s = round_as<T>(a / (1.f + expf(-a))); // F.silu, stored in T
        x1_to_z[i] = from_float<T>(s * to_float(x2[i]));   // the product, stored in T
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const int n_tp = static_cast<int>(ctx.param("n_tp", 1));
    const int n_fsdp = static_cast<int>(ctx.param("n_fsdp", ctx.world_size));
    if (n_tp * n_fsdp != ctx.world_size) {
        return ctx.fail("48 reference: n_tp * n_fsdp must equal the world size");
    }
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& w1 = ctx.input(1);
    const pkbw::TensorView& y = ctx.output(0);
    const pkbw::DType dt = x.dtype;
    const long long b = x.shape[0], d = x.shape[1], dr = w1.shape[0], dc = w1.shape[1];
    const std::size_t es = pkbw::element_size(dt);
    const pkbw::SubComm tp = ctx.sub_comm_blocks(n_tp);
    const pkbw::SubComm fsdp = ctx.sub_comm_strided(n_tp);
    if (dr * fsdp.size != d) {
        return ctx.fail("48 reference: W1_shard rows * n_fsdp must equal D");
    }

    const std::size_t weight_bytes = static_cast<std::size_t>(d * dc) * es;
    char* w1_full = static_cast<char*>(ctx.scratch("fsdp_tp_w1", weight_bytes));
    char* w2_full = static_cast<char*>(ctx.scratch("fsdp_tp_w2", weight_bytes));
    char* w3_stack = static_cast<char*>(ctx.scratch("fsdp_tp_w3_stack", weight_bytes));
    char* w3_full = static_cast<char*>(ctx.scratch("fsdp_tp_w3", weight_bytes));
    char* x1 = static_cast<char*>(ctx.scratch("fsdp_tp_x1", static_cast<std::size_t>(b * dc) * es));
    char* x2 = static_cast<char*>(ctx.scratch("fsdp_tp_x2", static_cast<std::size_t>(b * dc) * es));

    const std::size_t shard_bytes = ctx.input(1).nbytes();
    PKBW_CHECK(ctx, ncclGroupStart());
    PKBW_CHECK(ctx,
               ncclAllGather(ctx.input(1).data, w1_full, shard_bytes, ncclUint8, fsdp.nccl(), ctx.stream()));
    PKBW_CHECK(ctx,
               ncclAllGather(ctx.input(2).data, w2_full, shard_bytes, ncclUint8, fsdp.nccl(), ctx.stream()));
    PKBW_CHECK(ctx,
               ncclAllGather(ctx.input(3).data, w3_stack, shard_bytes, ncclUint8, fsdp.nccl(), ctx.stream()));
    PKBW_CHECK(ctx, ncclGroupEnd());
    const long long stack[] = {fsdp.size, dc, dr};
    const int to_cols[] = {1, 0, 2}; // [n_fsdp, dc, dr] -> [dc, n_fsdp * dr]: torch.cat(dim=1)
    PKBW_TRY(tk::permute(ctx, w3_stack, w3_full, es, 3, stack, to_cols));

    PKBW_TRY(tk::matmul(ctx, dt, b, dc, d, x.data, w1_full, x1));
    PKBW_TRY(tk::matmul(ctx, dt, b, dc, d, x.data, w2_full, x2));
    PKBW_TRY(tk::dispatch_float(ctx, dt, "48 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const long long count = b * dc;
        silu_times<T><<<tk::grid_for(count), 256, 0, ctx.stream()>>>(reinterpret_cast<T*>(x1),
                                                                     reinterpret_cast<const T*>(x2), count);
        return 0;
    }));
    PKBW_TRY(tk::matmul(ctx, dt, b, d, dc, x1, w3_full, y.data));
    PKBW_CHECK(ctx, ncclAllReduce(y.data, y.data, static_cast<size_t>(y.numel()), pkbw::nccl_dtype(dt),
                                  ncclSum, tp.nccl(), ctx.stream()));
    return tk::finish(ctx);
}
