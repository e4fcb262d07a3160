// Reference for PKB problem 23: a one-thread kernel computes loss * local (in D), ncclAllReduce sums
// it in D in place (as PKB's all_reduce of a D tensor), a second one-thread kernel the normalised
// loss and the backward coefficient, every operation rounded to D (toolkit round_as: torch's eager
// op on a D tensor).
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

using pkbw::tk::from_float;
using pkbw::tk::round_as;
using pkbw::tk::to_float;

template <class T>
__global__ void local_sum(const T* loss, const long long* local, T* loss_sum) {
    float l = to_float(*loss);
    if (*local == 0 && isnan(l))
        l = 0.f; // nan_to_num when this rank has no valid tokens
    *loss_sum = from_float<T>(l * round_as<T>(static_cast<float>(*local)));
}

template <class T>
__global__ void finish(const T* loss_sum, const long long* local, const long long* global, const T* g_norm,
                       const T* g_sum, T* normalized, T* grad) {
    const float lv = round_as<T>(static_cast<float>(*local));
    const float gv = round_as<T>(static_cast<float>(*global));
    *normalized = from_float<T>(to_float(*loss_sum) / gv);
    const float from_normalized = round_as<T>(round_as<T>(to_float(*g_norm) * lv) / gv);
    const float from_sum = round_as<T>(to_float(*g_sum) * lv);
    *grad = from_float<T>(from_normalized + from_sum);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    return pkbw::tk::dispatch_float(ctx, ctx.input(0).dtype, "23 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const auto* local = ctx.input(1).as<const long long>();
        T* loss_sum = ctx.output(1).as<T>();
        local_sum<T><<<1, 1, 0, ctx.stream()>>>(ctx.input(0).as<const T>(), local, loss_sum);
        PKBW_CHECK(ctx, ncclAllReduce(loss_sum, loss_sum, 1, pkbw::nccl_dtype(ctx.output(1).dtype), ncclSum,
                                      ctx.nccl(), ctx.stream()));
        finish<T><<<1, 1, 0, ctx.stream()>>>(loss_sum, local, ctx.input(2).as<const long long>(),
                                             ctx.input(3).as<const T>(), ctx.input(4).as<const T>(),
                                             ctx.output(0).as<T>(), ctx.output(2).as<T>());
        return pkbw::tk::finish(ctx);
    });
}
