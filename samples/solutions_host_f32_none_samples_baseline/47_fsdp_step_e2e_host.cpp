// Hand-written sample candidate (not LLM output)
// PKB 47 (FSDP step) on the host backend, f32: every rank publishes its parameter shard in a
// symmetric buffer and copies all shards (the all-gather), runs the MLP forward and backward in plain
// loops, publishes its gradient, sums all ranks' gradients over its own shard (the reduce-scatter)
// and applies AdamW with decoupled weight decay.
#include "pkbw/solution.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace {

// C[m, n] = A[m, k] · B (+ bias[n]); B stored [n, k] when b_transposed, else [k, n]; A stored [k, m]
// when a_transposed. Accumulates in double and rounds once: ReLU's sign decisions near zero then
// agree with a careful reference.
void matmul(const float* a, const float* b, float* c, long m, long n, long k, bool a_transposed,
            bool b_transposed, const float* bias = nullptr) {
    for (long i = 0; i < m; ++i)
        for (long j = 0; j < n; ++j) {
            double s = bias ? bias[j] : 0.0;
            for (long p = 0; p < k; ++p)
                s += static_cast<double>(a_transposed ? a[p * m + i] : a[i * k + p]) *
                     (b_transposed ? b[j * k + p] : b[p * n + j]);
            c[i * n + j] = static_cast<float>(s);
        }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("host fsdp sample: only f32 is supported");
    }
    const long rows = ctx.input(0).shape[0], d_in = ctx.input(0).shape[1];
    double shapes[6]; // (hidden, d_in), (hidden,), (d_out, hidden), (d_out,)
    if (ctx.param_list("param_shapes", shapes, 6) != 6) {
        return ctx.fail("host fsdp sample: param_shapes must list 6 sizes");
    }
    const long hidden = static_cast<long>(shapes[0]), d_out = static_cast<long>(shapes[3]);
    const long count[4] = {hidden * d_in, hidden, d_out * hidden, d_out};
    const long offset[4] = {0, count[0], count[0] + count[1], count[0] + count[1] + count[2]};
    const long total = offset[3] + count[3];
    const long part = ctx.input(2).numel(), begin = part * ctx.rank;
    // Every rank's shard in `state`; every rank's gradient in `grads`.
    const pkbw::SymmetricMemory state = ctx.symmetric("fsdp_host_state", total * sizeof(float));
    const pkbw::SymmetricMemory grads = ctx.symmetric("fsdp_host_grads", total * sizeof(float));
    std::memcpy(static_cast<float*>(state.local) + begin, ctx.input(2).data, part * sizeof(float));
    ctx.barrier();
    std::vector<float> p(total);
    for (int r = 0; r < ctx.world_size; ++r)
        std::memcpy(p.data() + r * part, static_cast<const float*>(state.peers[r]) + r * part,
                    part * sizeof(float));
    const float* w1 = p.data() + offset[0];
    const float* b1 = p.data() + offset[1];
    const float* w2 = p.data() + offset[2];
    const float* b2 = p.data() + offset[3];
    const float* x = ctx.input(0).as<const float>();
    const float* y = ctx.input(1).as<const float>();

    std::vector<float> h(rows * hidden), out(rows * d_out), d_o(rows * d_out), d_h(rows * hidden);
    matmul(x, w1, h.data(), rows, hidden, d_in, false, true, b1);
    for (long i = 0; i < rows * hidden; ++i)
        h[i] = std::max(h[i], 0.f);
    matmul(h.data(), w2, out.data(), rows, d_out, hidden, false, true, b2);
    const float scale = 2.f / static_cast<float>(rows * d_out);
    for (long i = 0; i < rows * d_out; ++i)
        d_o[i] = scale * (out[i] - y[i]);
    float* g = static_cast<float*>(grads.local);
    matmul(d_o.data(), h.data(), g + offset[2], d_out, hidden, rows, true, false);
    matmul(d_o.data(), w2, d_h.data(), rows, hidden, d_out, false, false);
    for (long i = 0; i < rows * hidden; ++i)
        if (h[i] <= 0.f)
            d_h[i] = 0.f;
    matmul(d_h.data(), x, g + offset[0], hidden, d_in, rows, true, false);
    for (long j = 0; j < hidden; ++j) {
        float s = 0.f;
        for (long i = 0; i < rows; ++i)
            s += d_h[i * hidden + j];
        g[offset[1] + j] = s;
    }
    for (long j = 0; j < d_out; ++j) {
        float s = 0.f;
        for (long i = 0; i < rows; ++i)
            s += d_o[i * d_out + j];
        g[offset[3] + j] = s;
    }
    ctx.barrier();

    const float lr = static_cast<float>(ctx.param("lr", 1e-3)),
                eps = static_cast<float>(ctx.param("eps", 1e-8));
    const double beta1 = ctx.param("beta1", 0.9), beta2 = ctx.param("beta2", 0.999),
                 step = ctx.param("step", 1);
    const float bc1 = static_cast<float>(1.0 - std::pow(beta1, step));
    const float bc2 = static_cast<float>(1.0 - std::pow(beta2, step));
    const float decay = static_cast<float>(ctx.param("lr", 1e-3) * ctx.param("weight_decay", 0.01));
    const float* theta0 = ctx.input(2).as<const float>();
    const float* m0 = ctx.input(3).as<const float>();
    const float* v0 = ctx.input(4).as<const float>();
    float* theta_out = ctx.output(0).as<float>();
    float* m_out = ctx.output(1).as<float>();
    float* v_out = ctx.output(2).as<float>();
    for (long i = 0; i < part; ++i) {
        const long at = begin + i;
        float gi = 0.f;
        for (int r = 0; r < ctx.world_size; ++r)
            gi += static_cast<const float*>(grads.peers[r])[at];
        gi /= static_cast<float>(ctx.world_size);
        const float m = static_cast<float>(beta1) * m0[i] + static_cast<float>(1.0 - beta1) * gi;
        const float v = static_cast<float>(beta2) * v0[i] + static_cast<float>(1.0 - beta2) * gi * gi;
        m_out[i] = m;
        v_out[i] = v;
        theta_out[i] = theta0[i] - lr * (m / bc1) / (std::sqrt(v / bc2) + eps) - decay * theta0[i];
    }
    ctx.barrier();
    return 0;
}
