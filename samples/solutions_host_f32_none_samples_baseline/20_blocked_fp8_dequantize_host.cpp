// Hand-written sample candidate (not LLM output)
// PKB 20 (blocked dequantisation, then all-to-all) on the host backend: every rank computes
// x = y * s in fp32 (element i scaled by scale i / block_size) for its whole [W, M, N] input into a
// symmetric buffer; rank j then copies chunk j of every rank r's x into chunk r of its output.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& y = ctx.input(0);
    const pkbw::TensorView& s = ctx.input(1);
    if (y.dtype != pkbw::DType::F32 || s.dtype != pkbw::DType::F32) {
        return ctx.fail("host fp8-dequantize sample: only f32 inputs are supported");
    }
    const std::int64_t block = static_cast<std::int64_t>(ctx.param("block_size", 128));
    const std::int64_t count = y.numel();
    if (block <= 0 || count % block != 0 || s.numel() * block != count) {
        return ctx.fail("host fp8-dequantize sample: scales do not cover the input in blocks of block_size");
    }
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("fp8_dequantize_host", static_cast<std::size_t>(count) * sizeof(float));
    float* x = static_cast<float*>(sym.local);
    const float* yv = y.as<const float>();
    const float* sv = s.as<const float>();
    for (std::int64_t i = 0; i < count; ++i) {
        x[i] = yv[i] * sv[i / block];
    }
    ctx.barrier();
    const std::int64_t chunk = count / ctx.world_size;
    float* out = ctx.output(0).as<float>();
    for (int r = 0; r < ctx.world_size; ++r) {
        std::memcpy(out + r * chunk, static_cast<const float*>(sym.peers[r]) + ctx.rank * chunk,
                    static_cast<std::size_t>(chunk) * sizeof(float));
    }
    ctx.barrier();
    return 0;
}
