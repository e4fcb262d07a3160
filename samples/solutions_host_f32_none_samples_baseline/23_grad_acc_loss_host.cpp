// Hand-written sample candidate (not LLM output)
// PKB 23 (loss_sum = sum over ranks of loss*local, normalized = loss_sum/global, grad =
// g_norm*local/global + g_sum*local; 0-dim tensors) on the host backend, for fp32 runs: each rank
// publishes loss*local in a symmetric slot, a barrier, then the sum in rank order.
#include "pkbw/solution.h"

#include <cstdint>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32 losses");
    }
    const float loss = *ctx.input(0).as<const float>();
    const float local = static_cast<float>(*ctx.input(1).as<const std::int64_t>());
    const float global = static_cast<float>(*ctx.input(2).as<const std::int64_t>());
    const float g_norm = *ctx.input(3).as<const float>();
    const float g_sum = *ctx.input(4).as<const float>();
    const pkbw::SymmetricMemory slots = ctx.symmetric("grad_acc_host", sizeof(float));
    *static_cast<float*>(slots.local) = loss * local;
    ctx.barrier();
    float loss_sum = 0.f;
    for (int r = 0; r < ctx.world_size; ++r) {
        loss_sum += *static_cast<const float*>(slots.peers[r]);
    }
    ctx.barrier();
    *ctx.output(0).as<float>() = loss_sum / global;
    *ctx.output(1).as<float>() = loss_sum;
    *ctx.output(2).as<float>() = g_norm * local / global + g_sum * local;
    return 0;
}
