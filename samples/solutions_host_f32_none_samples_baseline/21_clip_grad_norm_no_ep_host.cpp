// Hand-written sample candidate (not LLM output)
// PKB 21 (global L2 norm of three grads over all ranks, grads scaled in place by max_norm / norm
// when the norm exceeds max_norm) on the host backend: local sum of squares, published in a
// symmetric slot; after a barrier every rank adds the slots in rank order (the same total on every
// rank), writes the fp32 norm and scales its grads.
#include "pkbw/solution.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

float bf16_to_float(std::uint16_t v) {
    const std::uint32_t bits = static_cast<std::uint32_t>(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

std::uint16_t float_to_bf16(float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return static_cast<std::uint16_t>((bits >> 16) | 0x40); // quiet NaN
    }
    bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest even
    return static_cast<std::uint16_t>(bits >> 16);
}

double load(const pkbw::TensorView& t, std::int64_t i) {
    if (t.dtype == pkbw::DType::F32) {
        return static_cast<const float*>(t.data)[i];
    }
    return bf16_to_float(static_cast<const std::uint16_t*>(t.data)[i]);
}

void store(const pkbw::TensorView& t, std::int64_t i, float v) {
    if (t.dtype == pkbw::DType::F32) {
        static_cast<float*>(t.data)[i] = v;
    } else {
        static_cast<std::uint16_t*>(t.data)[i] = float_to_bf16(v);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    for (int k = 0; k < ctx.num_inputs; ++k) {
        if (ctx.input(k).dtype != pkbw::DType::F32 && ctx.input(k).dtype != pkbw::DType::BF16) {
            return ctx.fail("this sample handles f32 and bf16 grads");
        }
    }
    double local = 0;
    for (int k = 0; k < ctx.num_inputs; ++k) {
        for (std::int64_t i = 0; i < ctx.input(k).numel(); ++i) {
            const double v = load(ctx.input(k), i);
            local += v * v;
        }
    }
    const pkbw::SymmetricMemory slots = ctx.symmetric("clip21_host", sizeof(double));
    *static_cast<double*>(slots.local) = local;
    ctx.barrier();
    double total = 0;
    for (int r = 0; r < ctx.world_size; ++r) {
        total += *static_cast<const double*>(slots.peers[r]);
    }
    ctx.barrier(); // every rank has read every slot: the next call may overwrite ours
    const float norm = static_cast<float>(std::sqrt(total));
    *static_cast<float*>(ctx.output(0).data) = norm;
    const float max_norm = static_cast<float>(ctx.param("max_norm", 1.0));
    if (norm > max_norm) {
        const float coef = max_norm / norm;
        for (int k = 0; k < ctx.num_inputs; ++k) {
            for (std::int64_t i = 0; i < ctx.input(k).numel(); ++i) {
                store(ctx.input(k), i, static_cast<float>(load(ctx.input(k), i)) * coef);
            }
        }
    }
    return 0;
}
