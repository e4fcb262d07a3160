// Reference for PKB problem 46 on the toolkit: the shard's logits h·Wᵀ by tk::gemm (rounded to the
// dtype, as PKB's matmul), a bias kernel (PKB's second op, second rounding), ncclAllGather into
// [W, t, V/W] scratch, and tk::permute to [t, W, V/W] = [t, V].
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/permute.cuh"
#include "pkbw/toolkit/types.cuh"

namespace tk = pkbw::tk;

namespace {

template <class T>
__global__ void add_bias(T* logits, const T* bias, long long count, long long local) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP)
        logits[i] = tk::from_float<T>(tk::to_float(logits[i]) + tk::to_float(bias[i % local]));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& h = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    const long long tokens = h.shape[0], hidden = h.shape[1], local = w.shape[0], count = tokens * local;
    return tk::dispatch_float(ctx, h.dtype, "46_gemv_decode reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* mine = static_cast<T*>(ctx.scratch("gemv_local", count * sizeof(T)));
        T* gathered = static_cast<T*>(ctx.scratch("gemv_gathered", count * ctx.world_size * sizeof(T)));
        tk::Gemm g; // logits[t, local] = h[t, H] · W[local, H]ᵀ
        g.dtype = h.dtype;
        g.m = tokens;
        g.n = local;
        g.k = hidden;
        g.a = h.data;
        g.b = w.data;
        g.trans_b = true;
        g.c = mine;
        PKBW_TRY(tk::gemm(ctx, g));
        add_bias<T>
            <<<tk::grid_for(count), 256, 0, ctx.stream()>>>(mine, ctx.input(2).as<const T>(), count, local);
        PKBW_CHECK(ctx, ncclAllGather(mine, gathered, static_cast<std::size_t>(count),
                                      pkbw::nccl_dtype(h.dtype), ctx.nccl(), ctx.stream()));
        const long long shape[3] = {ctx.world_size, tokens, local};
        const int perm[3] = {1, 0, 2};
        PKBW_TRY(tk::permute(ctx, gathered, ctx.output(0).data, sizeof(T), 3, shape, perm));
        return tk::finish(ctx);
    });
}
