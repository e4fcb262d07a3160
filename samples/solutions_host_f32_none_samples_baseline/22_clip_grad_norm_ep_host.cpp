// Hand-written sample candidate (not LLM output)
// PKB 22 (EP-aware gradient clipping: the EP grad scaled by 1/ep_size, the norm over every rank of
// both grads, both scaled in place when the norm exceeds max_norm) on the host backend, for fp32
// runs. PKB reduces the EP term over two sub-groups that tile the world; a sum over all ranks gives
// the same value, so one symmetric slot per rank and a barrier do.
#include "pkbw/solution.h"

#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    float* non_ep = ctx.input(0).as<float>();
    float* ep = ctx.input(1).as<float>();
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32 grads");
    }
    const long long n0 = ctx.input(0).numel(), n1 = ctx.input(1).numel();
    const int ep_size = static_cast<int>(ctx.param("ep_size", 1));
    double local = 0;
    for (long long i = 0; i < n0; ++i) {
        local += static_cast<double>(non_ep[i]) * non_ep[i];
    }
    for (long long i = 0; i < n1; ++i) {
        if (ep_size > 1) {
            ep[i] *= 1.0f / static_cast<float>(ep_size);
        }
        local += static_cast<double>(ep[i]) * ep[i];
    }
    const pkbw::SymmetricMemory slots = ctx.symmetric("clip22_host", sizeof(double));
    *static_cast<double*>(slots.local) = local;
    ctx.barrier();
    double total = 0;
    for (int r = 0; r < ctx.world_size; ++r) {
        total += *static_cast<const double*>(slots.peers[r]);
    }
    ctx.barrier();
    const float norm = static_cast<float>(std::sqrt(total));
    *ctx.output(0).as<float>() = norm;
    const float max_norm = static_cast<float>(ctx.param("max_norm", 1.0));
    if (norm > max_norm) {
        const float coef = max_norm / norm;
        for (long long i = 0; i < n0; ++i) {
            non_ep[i] *= coef;
        }
        for (long long i = 0; i < n1; ++i) {
            ep[i] *= coef;
        }
    }
    return 0;
}
