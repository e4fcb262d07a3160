// Reference for PKB problem 17: a RoPE kernel (each op rounded to the dtype, as PyTorch's eager
// elementwise ops are), ncclAllGather of each result into [W, B, S, 8, 64], then a permute into
// [B, W*S, 8, 64] (concatenation along the sequence).
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/permute.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

using pkbw::tk::from_float;
using pkbw::tk::round_as;
using pkbw::tk::to_float;

constexpr int kHeads = 8;
constexpr int kDim = 64;

// x: [B*S, 8, 64]; cos/sin: [B*S, 64].
template <class T>
__global__ void rope(const T* x, const T* cs, const T* sn, T* y, long long positions) {
    const long long total = positions * kHeads * kDim;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP) {
        const int d = static_cast<int>(i % kDim);
        const long long pos = i / (kHeads * kDim);
        const long long base = i - d;
        const float rotated =
            d < kDim / 2 ? -to_float(x[base + d + kDim / 2]) : to_float(x[base + d - kDim / 2]);
        const float a = round_as<T>(to_float(x[i]) * to_float(cs[pos * kDim + d]));
        const float b = round_as<T>(rotated * to_float(sn[pos * kDim + d]));
        y[i] = from_float<T>(a + b);
    }
}

template <class T>
int run(const pkbw::Context& ctx) {
    const pkbw::TensorView& q = ctx.input(0);
    const long long batch = q.shape[0], seq = q.shape[1];
    const long long local = q.numel();
    const std::size_t bytes = q.nbytes();
    T* rotated = static_cast<T*>(ctx.scratch("rope_rotated", 2 * bytes));
    T* gathered = static_cast<T*>(ctx.scratch("rope_gathered", 2 * bytes * ctx.world_size));
    for (int t = 0; t < 2; ++t) {
        rope<T><<<pkbw::tk::grid_for(local), 256, 0, ctx.stream()>>>(
            ctx.input(t).as<const T>(), ctx.input(2).as<const T>(), ctx.input(3).as<const T>(),
            rotated + t * local, batch * seq);
    }
    for (int t = 0; t < 2; ++t) {
        PKBW_CHECK(ctx, ncclAllGather(rotated + t * local, gathered + t * local * ctx.world_size, bytes,
                                      ncclUint8, ctx.nccl(), ctx.stream()));
    }
    // [W, B, S*8*64] -> [B, W, S*8*64] = [B, W*S, 8, 64]
    const long long shape[] = {ctx.world_size, batch, local / batch};
    const int perm[] = {1, 0, 2};
    for (int t = 0; t < 2; ++t)
        PKBW_TRY(pkbw::tk::permute(ctx, gathered + t * local * ctx.world_size, ctx.output(t).data, sizeof(T),
                                   3, shape, perm));
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    PKBW_TRY(pkbw::tk::dispatch_float(ctx, ctx.input(0).dtype, "17_rope_allgather reference",
                                      [&](auto tag) { return run<typename decltype(tag)::type>(ctx); }));
    return pkbw::tk::finish(ctx);
}
