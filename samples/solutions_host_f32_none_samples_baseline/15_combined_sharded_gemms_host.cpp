// Hand-written sample candidate (not LLM output)
// PKB 15 (all-gather hidden columns, SiLU MLP, reduce-scatter) on the host backend. The
// reduce-scatter of PKB's reference only adds zeros to each rank's own row block, so each rank
// gathers just its rows of x from the peers' column shards and returns silu(x_rows @ W1) @ W2.
#include "pkbw/solution.h"

#include <cmath>
#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x_local = ctx.input(0);
    const pkbw::TensorView& w1 = ctx.input(1);
    const pkbw::TensorView& w2 = ctx.input(2);
    if (x_local.dtype != pkbw::DType::F32 || w1.dtype != pkbw::DType::F32 || w2.dtype != pkbw::DType::F32) {
        return ctx.fail("host combined-gemms sample: only f32 is supported");
    }
    const int world = ctx.world_size;
    const std::int64_t rows = x_local.shape[0], cols_shard = x_local.shape[1];
    const std::int64_t hidden = w1.shape[0], ffn = w1.shape[1];
    const std::int64_t my_rows = rows / world, first_row = ctx.rank * my_rows;
    const pkbw::SymmetricMemory sym = ctx.symmetric("combined_gemms_host", x_local.nbytes());
    std::memcpy(sym.local, x_local.data, x_local.nbytes());
    ctx.barrier();
    std::vector<float> x(static_cast<std::size_t>(my_rows * hidden));
    for (std::int64_t i = 0; i < my_rows; ++i) {
        for (int r = 0; r < world; ++r) {
            const float* src = static_cast<const float*>(sym.peers[r]) + (first_row + i) * cols_shard;
            std::memcpy(x.data() + i * hidden + r * cols_shard, src,
                        static_cast<std::size_t>(cols_shard) * sizeof(float));
        }
    }
    ctx.barrier();
    const float* w1v = w1.as<const float>();
    const float* w2v = w2.as<const float>();
    std::vector<float> act(static_cast<std::size_t>(my_rows * ffn), 0.f);
    for (std::int64_t i = 0; i < my_rows; ++i) {
        for (std::int64_t p = 0; p < hidden; ++p) {
            const float xv = x[i * hidden + p];
            for (std::int64_t j = 0; j < ffn; ++j) {
                act[i * ffn + j] += xv * w1v[p * ffn + j];
            }
        }
        for (std::int64_t j = 0; j < ffn; ++j) {
            const float v = act[i * ffn + j];
            act[i * ffn + j] = v / (1.f + std::exp(-v));
        }
    }
    float* out = ctx.output(0).as<float>();
    std::memset(out, 0, static_cast<std::size_t>(my_rows * hidden) * sizeof(float));
    for (std::int64_t i = 0; i < my_rows; ++i) {
        for (std::int64_t p = 0; p < ffn; ++p) {
            const float av = act[i * ffn + p];
            for (std::int64_t j = 0; j < hidden; ++j) {
                out[i * hidden + j] += av * w2v[p * hidden + j];
            }
        }
    }
    return 0;
}
