// Hand-written sample candidate (not LLM output)
// PKB 23 (loss_sum = sum over ranks of loss*local, normalized = loss_sum/global, grad =
// g_norm*local/global + g_sum*local; 0-dim bf16 tensors, every op rounded to bf16), baseline: a
// one-thread kernel writes loss*local into a symmetric slot, a host barrier, a one-thread kernel adds
// the slots in rank order (rounding to bf16 after each add, as a ring of bf16 adds would) and
// computes the three results; a last barrier before the slot is reused.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

__device__ float bf(float v) {
    return __bfloat162float(__float2bfloat16(v));
}

__global__ void publish(const __nv_bfloat16* loss, const long long* local, __nv_bfloat16* slot) {
    *slot = __float2bfloat16(__bfloat162float(*loss) * bf(static_cast<float>(*local)));
}

__global__ void finish(void* const* slots, int world, const long long* local, const long long* global,
                       const __nv_bfloat16* g_norm, const __nv_bfloat16* g_sum, __nv_bfloat16* normalized,
                       __nv_bfloat16* loss_sum, __nv_bfloat16* grad) {
    float sum = __bfloat162float(*static_cast<const __nv_bfloat16*>(slots[0]));
    for (int r = 1; r < world; ++r)
        sum = bf(sum + __bfloat162float(*static_cast<const __nv_bfloat16*>(slots[r])));
    const float lv = bf(static_cast<float>(*local)), gv = bf(static_cast<float>(*global));
    *loss_sum = __float2bfloat16(sum);
    *normalized = __float2bfloat16(sum / gv);
    *grad = __float2bfloat16(bf(bf(__bfloat162float(*g_norm) * lv) / gv) + bf(__bfloat162float(*g_sum) * lv));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::BF16) {
        return ctx.fail("this sample handles bf16 losses");
    }
    const pkbw::SymmetricMemory slots = ctx.symmetric("grad_acc_baseline", sizeof(__nv_bfloat16));
    const auto* local = ctx.input(1).as<const long long>();
    publish<<<1, 1, 0, ctx.stream()>>>(ctx.input(0).as<const __nv_bfloat16>(), local,
                                       static_cast<__nv_bfloat16*>(slots.local));
    ctx.barrier();
    finish<<<1, 1, 0, ctx.stream()>>>(
        slots.peers_device, ctx.world_size, local, ctx.input(2).as<const long long>(),
        ctx.input(3).as<const __nv_bfloat16>(), ctx.input(4).as<const __nv_bfloat16>(),
        ctx.output(0).as<__nv_bfloat16>(), ctx.output(1).as<__nv_bfloat16>(),
        ctx.output(2).as<__nv_bfloat16>());
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
