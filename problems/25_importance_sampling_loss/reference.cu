// Reference for PKB problem 25: logits = h W^T (toolkit linear: cuBLAS, fp32 accumulation, stored in
// D), toolkit row_logsumexp over the 32000 columns, one block for PKB's per-token chain (each op
// rounded to D as PyTorch stores it) and the local sums, the min and the max; four ncclAllReduces
// (the D sums, the fp32 valid count, MIN, MAX) in one NCCL group; one thread for the loss and the
// metrics (divisions by the global count in fp32).
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cstdint>

namespace {

constexpr int kThreads = 1024;

// The D-typed values that are summed over ranks, in this order.
enum DSum { kPg, kRatio, kK3, kEntropy, kDSums };

template <class T>
struct Tokens {
    const T* logits;
    const float* lse;
    const std::int64_t* labels;
    const T* old_lp;
    const T* adv;
    long long m, vocab, ignore;
    T* logprobs_out;
    T* pg_out;
    T* sums;          // [kDSums], this rank's sums (all-reduced in place)
    float* valid;     // [1], fp32 count (all-reduced in place)
    T* min_max;       // [2]: min, max of the valid ratios (all-reduced in place, MIN and MAX)
    float* surrogate; // [1], the local surrogate sum (stored in D), not reduced
};

template <class T>
__global__ void per_token(Tokens<T> t) {
    using namespace pkbw::tk;
    float s_valid = 0, s_pg = 0, s_ratio = 0, s_k3 = 0, s_ent = 0, s_surr = 0;
    float lo = INFINITY, hi = -INFINITY;
    for (long long i = threadIdx.x; i < t.m; i += kThreads) {
        const long long y = t.labels[i];
        const bool valid = y != t.ignore;
        // F.cross_entropy: log_softmax stored in D, the picked entry negated; 0 when ignored.
        const float ce = valid ? -round_as<T>(to_float(t.logits[i * t.vocab + y]) - t.lse[i]) : 0.f;
        const float new_lp = -ce;
        t.logprobs_out[i] = from_float<T>(new_lp);
        const float delta =
            valid ? fminf(fmaxf(round_as<T>(new_lp - to_float(t.old_lp[i])), -20.f), 20.f) : 0.f;
        const float ratio = round_as<T>(expf(delta));
        const float ratio_adv = round_as<T>(ratio * to_float(t.adv[i]));
        t.pg_out[i] = from_float<T>(valid ? -ratio_adv : 0.f);
        if (!valid)
            continue;
        s_valid += 1;
        s_pg -= ratio_adv;
        s_surr += round_as<T>(ratio_adv * ce);
        s_ratio += ratio;
        lo = fminf(lo, ratio);
        hi = fmaxf(hi, ratio);
        s_k3 += round_as<T>(round_as<T>(ratio - delta) - 1.f);
        s_ent += ce;
    }
    s_valid = block_reduce<kThreads>(s_valid, SumOp{});
    s_pg = block_reduce<kThreads>(s_pg, SumOp{});
    s_ratio = block_reduce<kThreads>(s_ratio, SumOp{});
    s_k3 = block_reduce<kThreads>(s_k3, SumOp{});
    s_ent = block_reduce<kThreads>(s_ent, SumOp{});
    s_surr = block_reduce<kThreads>(s_surr, SumOp{});
    lo = -block_reduce<kThreads>(-lo, MaxOp{});
    hi = block_reduce<kThreads>(hi, MaxOp{});
    if (threadIdx.x == 0) {
        t.sums[kPg] = from_float<T>(s_pg); // torch.sum of a D tensor is stored in D
        t.sums[kRatio] = from_float<T>(s_ratio);
        t.sums[kK3] = from_float<T>(s_k3);
        t.sums[kEntropy] = from_float<T>(s_ent);
        *t.valid = s_valid;
        t.min_max[0] = from_float<T>(lo);
        t.min_max[1] = from_float<T>(hi);
        *t.surrogate = round_as<T>(s_surr);
    }
}

template <class T>
__global__ void finish_loss(const T* sums, const float* valid, const T* min_max, const float* surrogate_sum,
                            float* loss, float* metrics) {
    using namespace pkbw::tk;
    const float count = fmaxf(*valid, 1.f);
    const float true_pg = to_float(sums[kPg]) / count;
    const float surrogate = *surrogate_sum / count;
    *loss = (true_pg + surrogate) - surrogate; // true_pg.detach() + surrogate - surrogate.detach()
    metrics[0] = to_float(sums[kRatio]) / count;
    metrics[1] = to_float(min_max[0]);
    metrics[2] = to_float(min_max[1]);
    metrics[3] = to_float(sums[kK3]) / count;
    metrics[4] = to_float(sums[kEntropy]) / count;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& h = ctx.input(0);
    const pkbw::TensorView& weight = ctx.input(1);
    const pkbw::DType dt = h.dtype;
    const long long m = h.shape[0], n = h.shape[1], vocab = weight.shape[0];
    const std::size_t es = pkbw::element_size(dt);
    void* logits = ctx.scratch("is_loss_logits", static_cast<std::size_t>(m * vocab) * es);
    float* lse = static_cast<float*>(ctx.scratch("is_loss_lse", static_cast<std::size_t>(m) * sizeof(float)));
    // One scratch block for the small values: D sums and min/max first, then the fp32 scalars.
    char* small = static_cast<char*>(ctx.scratch("is_loss_small", 64));
    void* sums = small;
    void* min_max = small + 16;
    float* valid = reinterpret_cast<float*>(small + 32);
    float* surrogate = reinterpret_cast<float*>(small + 36);

    PKBW_TRY(tk::linear(ctx, dt, m, n, vocab, h.data, weight.data, nullptr, logits));
    PKBW_TRY(tk::row_logsumexp(ctx, dt, logits, m, vocab, lse));
    PKBW_TRY(tk::dispatch_float(ctx, dt, "25 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        Tokens<T> t{static_cast<const T*>(logits),
                    lse,
                    ctx.input(2).as<std::int64_t>(),
                    ctx.input(3).as<T>(),
                    ctx.input(4).as<T>(),
                    m,
                    vocab,
                    static_cast<long long>(ctx.param("ignore_index", -100)),
                    ctx.output(1).as<T>(),
                    ctx.output(2).as<T>(),
                    static_cast<T*>(sums),
                    valid,
                    static_cast<T*>(min_max),
                    surrogate};
        per_token<T><<<1, kThreads, 0, ctx.stream()>>>(t);
        return 0;
    }));
    const ncclDataType_t type = pkbw::nccl_dtype(dt);
    char* mm = static_cast<char*>(min_max);
    PKBW_CHECK(ctx, ncclGroupStart());
    PKBW_CHECK(ctx, ncclAllReduce(sums, sums, kDSums, type, ncclSum, ctx.nccl(), ctx.stream()));
    PKBW_CHECK(ctx, ncclAllReduce(valid, valid, 1, ncclFloat32, ncclSum, ctx.nccl(), ctx.stream()));
    PKBW_CHECK(ctx, ncclAllReduce(mm, mm, 1, type, ncclMin, ctx.nccl(), ctx.stream()));
    PKBW_CHECK(ctx, ncclAllReduce(mm + es, mm + es, 1, type, ncclMax, ctx.nccl(), ctx.stream()));
    PKBW_CHECK(ctx, ncclGroupEnd());
    PKBW_TRY(tk::dispatch_float(ctx, dt, "25 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        finish_loss<T><<<1, 1, 0, ctx.stream()>>>(static_cast<const T*>(sums), valid,
                                                  static_cast<const T*>(min_max), surrogate,
                                                  ctx.output(0).as<float>(), ctx.output(3).as<float>());
        return 0;
    }));
    return tk::finish(ctx);
}
