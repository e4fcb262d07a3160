// Hand-written sample candidate (not LLM output)
// PKB 45 (reduce-scatter of a flat [W*rows*hidden] input, divided by W, RMSNorm of the
// [rows, hidden] shard times gamma) on the host backend, for fp32 runs: publish the input in a
// symmetric buffer, barrier, sum this rank's chunk over the peers, normalise each row, barrier.
#include "pkbw/solution.h"

#include <cmath>
#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    if (in.dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32 inputs");
    }
    const float* gamma = ctx.input(1).as<const float>();
    float* out = ctx.output(0).as<float>();
    const long long rows = ctx.output(0).shape[0], hidden = ctx.output(0).shape[1];
    const long long chunk = rows * hidden;
    const float eps = static_cast<float>(ctx.param("eps", 1e-5));
    const pkbw::SymmetricMemory shared = ctx.symmetric("rs_rmsnorm_host", in.nbytes());
    std::memcpy(shared.local, in.data, in.nbytes());
    ctx.barrier();
    std::vector<float> x(static_cast<std::size_t>(chunk), 0.f);
    for (int r = 0; r < ctx.world_size; ++r) {
        const float* peer = static_cast<const float*>(shared.peers[r]) + ctx.rank * chunk;
        for (long long i = 0; i < chunk; ++i) {
            x[i] += peer[i];
        }
    }
    ctx.barrier();
    for (long long row = 0; row < rows; ++row) {
        float squares = 0.f;
        for (long long j = 0; j < hidden; ++j) {
            x[row * hidden + j] /= static_cast<float>(ctx.world_size);
            squares += x[row * hidden + j] * x[row * hidden + j];
        }
        const float rms = 1.f / std::sqrt(squares / static_cast<float>(hidden) + eps);
        for (long long j = 0; j < hidden; ++j) {
            out[row * hidden + j] = x[row * hidden + j] * rms * gamma[j];
        }
    }
    return 0;
}
