// The host side of the training-step helpers (mlp_host.h, adam_host.h, dtype_collectives_host.h is
// exercised through the problems' host evals): the MLP gradient against finite differences of the
// loss, Adam's first step against its closed form.
#include "pkbw/toolkit/adam_host.h"
#include "pkbw/toolkit/mlp_host.h"

#include <cmath>
#include <gtest/gtest.h>

using namespace pkbw::tk;

namespace {

// mse_loss(linear(relu(linear(x, W1, b1)), W2, b2), y), mean over all outputs, in double.
double mlp_loss(const MlpShape& s, const std::vector<double>& flat, const std::vector<double>& x,
                const std::vector<double>& y) {
    std::vector<double> h =
        gemm_f64(x, mlp_part(flat, s, 0), s.rows, s.hidden, s.d_in, false, true, mlp_part(flat, s, 1));
    for (double& v : h)
        v = v > 0 ? v : 0.0;
    const std::vector<double> out =
        gemm_f64(h, mlp_part(flat, s, 2), s.rows, s.d_out, s.hidden, false, true, mlp_part(flat, s, 3));
    double loss = 0;
    for (std::size_t i = 0; i < out.size(); ++i)
        loss += (out[i] - y[i]) * (out[i] - y[i]);
    return loss / static_cast<double>(out.size());
}

std::vector<double> values(std::size_t n, double seed) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = std::sin(seed + 1.7 * static_cast<double>(i)) * 1.3;
    return v;
}

} // namespace

TEST(ToolkitTraining, FlatLayoutIsTorchsFlattenOrder) {
    const MlpShape s{5, 3, 4, 2};
    EXPECT_EQ(s.offset(0), 0);
    EXPECT_EQ(s.offset(1), 12);
    EXPECT_EQ(s.offset(2), 16);
    EXPECT_EQ(s.offset(3), 24);
    EXPECT_EQ(s.numel(), 26);
}

TEST(ToolkitTraining, MlpGradientMatchesFiniteDifferences) {
    const MlpShape s{5, 3, 4, 2};
    const std::vector<double> flat = values(static_cast<std::size_t>(s.numel()), 0.3);
    const std::vector<double> x = values(static_cast<std::size_t>(s.rows * s.d_in), 1.1);
    const std::vector<double> y = values(static_cast<std::size_t>(s.rows * s.d_out), 2.9);
    const std::vector<double> grad = mlp_mse_gradient_f64(pkbw::DType::F64, s, flat, x, y);
    ASSERT_EQ(grad.size(), flat.size());
    const double h = 1e-6;
    for (std::size_t i = 0; i < flat.size(); ++i) {
        std::vector<double> up = flat, down = flat;
        up[i] += h;
        down[i] -= h;
        const double numeric = (mlp_loss(s, up, x, y) - mlp_loss(s, down, x, y)) / (2 * h);
        EXPECT_NEAR(grad[i], numeric, 1e-6) << "parameter " << i;
    }
}

TEST(ToolkitTraining, AdamFirstStepClosedForm) {
    AdamHyper hyper;
    hyper.step = 1;
    const std::vector<double> g = {0.5, -2.0, 1e-3};
    for (AdamRule rule : {AdamRule::ScaledStep, AdamRule::DecoupledDecay}) {
        hyper.rule = rule;
        hyper.weight_decay = rule == AdamRule::DecoupledDecay ? 0.01 : 0.0;
        std::vector<double> w = {1.0, -1.0, 2.0}, m(3, 0.0), v(3, 0.0);
        adam_update_f64(pkbw::DType::F64, g, w, m, v, hyper);
        const double w0[3] = {1.0, -1.0, 2.0};
        for (int i = 0; i < 3; ++i) {
            EXPECT_NEAR(m[i], 0.1 * g[i], 1e-15);
            EXPECT_NEAR(v[i], 0.001 * g[i] * g[i], 1e-15);
            // Step 1: m̂ = g, v̂ = g², so the step is lr · g / (|g| + eps).
            const double expected = w0[i] - hyper.lr * g[i] / (std::fabs(g[i]) + hyper.eps) -
                                    hyper.lr * hyper.weight_decay * w0[i];
            EXPECT_NEAR(w[i], expected, 1e-12);
        }
    }
    // In bf16 every op rounds: the moments come out as bf16 values.
    std::vector<double> w = {1.0}, m = {0.0}, v = {0.0};
    hyper.rule = AdamRule::ScaledStep;
    adam_update_f64(pkbw::DType::BF16, {0.3}, w, m, v, hyper);
    EXPECT_EQ(m[0], round_to(pkbw::DType::BF16, m[0]));
    EXPECT_NEAR(m[0], 0.03, 1e-3);
}
