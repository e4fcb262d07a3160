// Hand-written sample candidate (not LLM output)
// PKB 80 (distributed Sinkhorn-Knopp) on the host backend, fp32: Q stays in the [B, P] layout of the
// input; each all-reduce publishes this rank's partial sums in its own region of one symmetric
// buffer, then sums the peers' after a barrier.
#include "pkbw/solution.h"

#include <cmath>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& t = ctx.input(0);
    const std::int64_t batch = t.shape[0], protos = t.shape[1];
    const float temp = static_cast<float>(ctx.param("teacher_temp", 0.07));
    const int iterations = static_cast<int>(ctx.param("n_iterations", 3));
    // Region 0: [batch count, mass]; region 1 + i: iteration i's prototype sums.
    const std::size_t region = static_cast<std::size_t>(protos) + 2;
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("sinkhorn_host", (iterations + 1) * region * sizeof(float));
    float* mine = static_cast<float*>(sym.local);
    auto reduced = [&](std::size_t offset, std::int64_t i) {
        float s = 0.f;
        for (int r = 0; r < ctx.world_size; ++r) {
            s += static_cast<const float*>(sym.peers[r])[offset + i];
        }
        return s;
    };
    const float* in = t.as<const float>();
    float* q = ctx.output(0).as<float>();
    float mass = 0.f;
    for (std::int64_t i = 0; i < batch * protos; ++i) {
        q[i] = std::exp(in[i] / temp);
        mass += q[i];
    }
    mine[0] = static_cast<float>(ctx.input(1).as<const std::int64_t>()[0]);
    mine[1] = mass;
    ctx.barrier();
    const float total_batch = reduced(0, 0), total_mass = reduced(0, 1);
    for (std::int64_t i = 0; i < batch * protos; ++i) {
        q[i] /= total_mass;
    }
    for (int it = 0; it < iterations; ++it) {
        float* sums = mine + (it + 1) * region;
        for (std::int64_t p = 0; p < protos; ++p) {
            sums[p] = 0.f;
        }
        for (std::int64_t b = 0; b < batch; ++b) {
            for (std::int64_t p = 0; p < protos; ++p) {
                sums[p] += q[b * protos + p];
            }
        }
        ctx.barrier();
        std::vector<float> scale(static_cast<std::size_t>(protos));
        for (std::int64_t p = 0; p < protos; ++p) {
            scale[p] = 1.f / (reduced((it + 1) * region, p) * static_cast<float>(protos));
        }
        for (std::int64_t b = 0; b < batch; ++b) {
            float* row = q + b * protos;
            float sample = 0.f;
            for (std::int64_t p = 0; p < protos; ++p) {
                row[p] *= scale[p];
                sample += row[p];
            }
            const float inv = 1.f / (sample * total_batch);
            for (std::int64_t p = 0; p < protos; ++p) {
                row[p] *= inv;
            }
        }
    }
    for (std::int64_t i = 0; i < batch * protos; ++i) {
        q[i] *= total_batch;
    }
    ctx.barrier();
    return 0;
}
