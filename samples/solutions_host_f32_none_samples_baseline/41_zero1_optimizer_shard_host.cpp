// Hand-written sample candidate (not LLM output)
// PKB 41 (ZeRO-1 step) on the host backend, f32: rank 0 publishes its parameters in a symmetric
// buffer, every rank copies them, runs the MLP forward and backward in plain loops and publishes its
// gradient; each rank averages all ranks' gradients over its own 1/W slice, applies Adam there,
// publishes the updated slice, and after a barrier assembles the parameters from every slice.
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
        return ctx.fail("host zero1 sample: only f32 is supported");
    }
    const long rows = ctx.input(0).shape[0], d_in = ctx.input(0).shape[1];
    const long hidden = ctx.input(2).shape[0], d_out = ctx.input(4).shape[0];
    long count[4], offset[4], total = 0;
    for (int k = 0; k < 4; ++k) {
        count[k] = ctx.input(2 + k).numel();
        offset[k] = total;
        total += count[k];
    }
    // Rank 0's params in `state`; every rank's gradient in `grads`; updated slices in `slices`.
    const pkbw::SymmetricMemory state = ctx.symmetric("zero1_host_state", total * sizeof(float));
    const pkbw::SymmetricMemory grads = ctx.symmetric("zero1_host_grads", total * sizeof(float));
    const pkbw::SymmetricMemory slices = ctx.symmetric("zero1_host_slices", total * sizeof(float));
    if (ctx.rank == 0) {
        float* dst = static_cast<float*>(state.local);
        for (int k = 0; k < 4; ++k)
            std::memcpy(dst + offset[k], ctx.input(2 + k).data, count[k] * sizeof(float));
    }
    ctx.barrier();
    std::vector<float> p(total);
    std::memcpy(p.data(), state.peers[0], p.size() * sizeof(float));
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
    const long part = total / ctx.world_size, begin = part * ctx.rank;
    const float* m0 = ctx.input(6).as<const float>();
    const float* v0 = ctx.input(7).as<const float>();
    float* m_out = ctx.output(4).as<float>();
    float* v_out = ctx.output(5).as<float>();
    float* slice = static_cast<float*>(slices.local);
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
        slice[at] = p[at] - lr * (m / bc1) / (std::sqrt(v / bc2) + eps);
    }
    ctx.barrier();
    for (int k = 0; k < 4; ++k) {
        float* w_out = ctx.output(k).as<float>();
        for (long i = 0; i < count[k]; ++i) {
            const long at = offset[k] + i;
            w_out[i] = static_cast<const float*>(slices.peers[at / part])[at];
        }
    }
    ctx.barrier();
    return 0;
}
