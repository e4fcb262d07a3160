// CPU model of problem 40's step (W = 1, bf16, PKB's sizes at N = 1024: 1024 rows, d_in 256, hidden 512,
// d_out 256, every input standard normal) for issue 29: the first Adam moment of W1, m = r(r(1 − β₁)·gW1),
// with both forward linears rounded once (the bias in the fp32 sum, as PyTorch's addmm epilogue and the
// host oracle do) against the same with the bias added after the product is rounded to bf16
// (r(r(x·Wᵀ) + b)). Prints the ReLU-mask flips between the two, and the m_W1 elements failing PKB's
// rule (allclose, atol = rtol = 1e-2) with their rows. On the H200 the reference missed PKB in 27-101
// elements of a few W1 rows (40-47, max 0.017-0.031); this model gives that signature.
// Every GEMM is exact (double) and rounded once, so nothing but the bias's rounding differs.
// Build and run (about a minute): g++ -O2 -ffp-contract=off -o /tmp/mlp40 tools/gpu/mlp40_bias_model.cpp &&
// /tmp/mlp40 [SEED]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

float bf(double v) {
    float f = static_cast<float>(v);
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    std::memcpy(&f, &u, 4);
    return f;
}

constexpr int kRows = 1024, kIn = 256, kHidden = 512, kOut = 256;
using Vec = std::vector<float>;

struct Params {
    Vec x, y, w1, b1, w2, b2;
};

struct Step {
    Vec m_w1;
    std::vector<char> mask;
};

// r(x·Wᵀ + b) (once) or r(r(x·Wᵀ) + b) (twice): x [rows, in], W [out, in].
Vec linear(const Vec& x, const Vec& w, const Vec& b, int in, int out, bool bias_twice) {
    Vec y(static_cast<std::size_t>(kRows) * out);
    for (int r = 0; r < kRows; ++r)
        for (int j = 0; j < out; ++j) {
            double s = 0;
            for (int k = 0; k < in; ++k)
                s += static_cast<double>(x[r * in + k]) * w[j * in + k];
            y[r * out + j] = bias_twice ? bf(static_cast<double>(bf(s)) + b[j]) : bf(s + b[j]);
        }
    return y;
}

Step run(const Params& p, bool bias_twice) {
    const Vec pre = linear(p.x, p.w1, p.b1, kIn, kHidden, bias_twice);
    Vec h(pre.size());
    for (std::size_t i = 0; i < pre.size(); ++i)
        h[i] = pre[i] > 0 ? pre[i] : 0.f;
    const Vec out = linear(h, p.w2, p.b2, kHidden, kOut, bias_twice);
    const float alpha = bf(2.0 / (static_cast<double>(kRows) * kOut)); // mse_loss_backward, mean
    Vec d_out(out.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        d_out[i] = bf(static_cast<double>(alpha) * bf(static_cast<double>(out[i]) - p.y[i]));
    Vec d_pre(pre.size());
    for (int r = 0; r < kRows; ++r)
        for (int j = 0; j < kHidden; ++j) {
            double s = 0;
            for (int k = 0; k < kOut; ++k)
                s += static_cast<double>(d_out[r * kOut + k]) * p.w2[k * kHidden + j];
            d_pre[r * kHidden + j] = h[r * kHidden + j] > 0 ? bf(s) : 0.f; // threshold_backward
        }
    std::vector<double> g(static_cast<std::size_t>(kHidden) * kIn, 0.0);
    for (int r = 0; r < kRows; ++r)
        for (int j = 0; j < kHidden; ++j)
            if (const double d = d_pre[r * kHidden + j]; d != 0)
                for (int k = 0; k < kIn; ++k)
                    g[j * kIn + k] += d * p.x[r * kIn + k];
    Step s;
    const float one_minus_beta1 = bf(1.0 - 0.9); // m = 0.9·0 + (1 − 0.9)·g
    for (double v : g)
        s.m_w1.push_back(bf(static_cast<double>(one_minus_beta1) * bf(v)));
    for (float v : pre)
        s.mask.push_back(v > 0);
    return s;
}

} // namespace

int main(int argc, char** argv) {
    const unsigned seed = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 1u;
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> normal;
    auto draw = [&](std::size_t n) {
        Vec v(n);
        for (float& e : v)
            e = bf(normal(gen));
        return v;
    };
    Params p;
    p.x = draw(static_cast<std::size_t>(kRows) * kIn);
    p.y = draw(static_cast<std::size_t>(kRows) * kOut);
    p.w1 = draw(static_cast<std::size_t>(kHidden) * kIn);
    p.b1 = draw(kHidden);
    p.w2 = draw(static_cast<std::size_t>(kOut) * kHidden);
    p.b2 = draw(kOut);
    const Step once = run(p, false), twice = run(p, true);
    long flips = 0;
    std::vector<int> flips_of_unit(kHidden, 0); // per hidden unit = per row of W1
    for (std::size_t i = 0; i < once.mask.size(); ++i)
        if (once.mask[i] != twice.mask[i]) {
            ++flips;
            ++flips_of_unit[i % kHidden];
        }
    long bad = 0;
    double max_err = 0;
    std::vector<int> rows;
    for (std::size_t i = 0; i < once.m_w1.size(); ++i) {
        const double e = std::fabs(static_cast<double>(twice.m_w1[i]) - once.m_w1[i]);
        max_err = std::max(max_err, e);
        if (e > 1e-2 + 1e-2 * std::fabs(once.m_w1[i])) {
            ++bad;
            const int row = static_cast<int>(i / kIn);
            if (rows.empty() || rows.back() != row)
                rows.push_back(row);
        }
    }
    std::printf(
        "seed %u, bias rounded twice in both linears: %ld of %d ReLU masks flip; m_W1: %ld of %d elements "
        "fail in %zu rows (max abs error %.3g); rows",
        seed, flips, kRows * kHidden, bad, kHidden * kIn, rows.size(), max_err);
    int rows_with_flip = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        rows_with_flip += flips_of_unit[rows[i]] > 0 ? 1 : 0;
        if (i < 16)
            std::printf(" %d (%d flips)", rows[i], flips_of_unit[rows[i]]);
    }
    std::printf("; %d of the %zu rows hold a ReLU-mask flip\n", rows_with_flip, rows.size());
    return 0;
}
