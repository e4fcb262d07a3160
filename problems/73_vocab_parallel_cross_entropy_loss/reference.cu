// Reference for PKB problem 73 (Megatron vocab-parallel cross-entropy) on the toolkit: row maxima by
// tk::row_reduce (fp32; a max of dtype values is exact, so ncclAllReduce(MAX) in fp32 equals PKB's in
// the dtype), a kernel that subtracts the max in place and writes the row's target logit (zero where
// another rank owns the target) and its sum of exp (fp32 accumulation of dtype-rounded exps, rounded
// once, as torch's sum), one ncclAllReduce(SUM) over both [2, rows] in the dtype (PKB's two SUM
// all-reduces fused: same op, same dtype), and a kernel for log(sum) - target.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cstdint>

namespace tk = pkbw::tk;

namespace {

constexpr int kThreads = 128;

// parts[row] = shifted target logit or 0, parts[rows + row] = sum of exp.
template <class T>
__global__ void shift_and_sum(T* logits, const float* maxima, const std::int64_t* target, T* parts,
                              long long rows, long long local, long long start) {
    const long long row = blockIdx.x;
    const float m = maxima[row];
    float sum = 0.f;
    for (long long j = threadIdx.x; j < local; j += kThreads) {
        const T shifted = tk::from_float<T>(tk::to_float(logits[row * local + j]) - m);
        logits[row * local + j] = shifted;
        sum += tk::round_as<T>(expf(tk::to_float(shifted)));
    }
    sum = tk::block_reduce<kThreads>(sum, tk::SumOp{});
    if (threadIdx.x == 0) {
        const long long t = target[row] - start;
        parts[row] = (t >= 0 && t < local) ? logits[row * local + t] : tk::from_float<T>(0.f);
        parts[rows + row] = tk::from_float<T>(sum);
    }
}

template <class T>
__global__ void finish_loss(const T* parts, T* out, long long rows) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < rows; i += PKBW_GRID_STRIDE_STEP)
        out[i] =
            tk::from_float<T>(tk::round_as<T>(logf(tk::to_float(parts[rows + i]))) - tk::to_float(parts[i]));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& logits = ctx.input(0);
    const long long local = logits.shape[logits.ndim - 1];
    const long long rows = logits.numel() / local;
    return tk::dispatch_float(ctx, logits.dtype, "73 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        float* maxima = static_cast<float*>(ctx.scratch("ce_max", rows * sizeof(float)));
        T* parts = static_cast<T*>(ctx.scratch("ce_parts", 2 * rows * sizeof(T)));
        PKBW_TRY(tk::row_reduce(ctx, logits.dtype, tk::RowOp::Max, logits.data, rows, local, maxima));
        PKBW_CHECK(ctx, ncclAllReduce(maxima, maxima, rows, ncclFloat32, ncclMax, ctx.nccl(), ctx.stream()));
        shift_and_sum<T><<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream()>>>(
            logits.as<T>(), maxima, ctx.input(1).as<const std::int64_t>(), parts, rows, local,
            ctx.rank * local);
        PKBW_CHECK(ctx, ncclAllReduce(parts, parts, 2 * rows, pkbw::nccl_dtype(logits.dtype), ncclSum,
                                      ctx.nccl(), ctx.stream()));
        finish_loss<T><<<tk::grid_for(rows), 256, 0, ctx.stream()>>>(parts, ctx.output(0).as<T>(), rows);
        return tk::finish(ctx);
    });
}
