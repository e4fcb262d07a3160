// CPU model of problem 32 (W = 1, M = N = 1024, bf16) for issue 29: how many output elements fail PKB's rule
// (allclose, atol = rtol = 1e-2) when the GEMMs sum in IEEE fp32 in another order instead of exactly.
// Inputs are drawn as PKB draws them (README: x, router, LoRA factors standard normal; nn.Linear weights and
// biases U(±1/√fan_in)), every torch op rounded to bf16 where torch stores it, the router's softmax summed
// in torch's order, top-2 with the lower index first at ties. At W = 1 both routing slots of a token reach
// the one MLP, so out = r(r(w₁·y) + r(w₂·y)) with y = MLP(x).
// Orders: seq = one fp32 FMA chain (the baseline CUDA sample's dot products), lanes32 = 32 strided
// partial sums and a tree (a warp reduction), chunks16 = exact-ish 16-term chunks added in turn (an MMA
// tile's K step). bias2x is no order but the bias added after the product is rounded to bf16 (r(r(x·Wᵀ) + b)
// instead of r(x·Wᵀ + b)), on the GEMMs with a bias: on the base projections it fails ~10^4 elements in ~200
// rows, the H200's signature (issue 29). Build and run (about 2 minutes on one core):
//   g++ -O2 -ffp-contract=off -o /tmp/moe32_order_model tools/gpu/moe32_order_model.cpp &&
//   /tmp/moe32_order_model [SEED]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

// Round to bf16, nearest even (through float: a double rounding that moves no value of this model).
float bf(double v) {
    float f = static_cast<float>(v);
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    std::memcpy(&f, &u, 4);
    return f;
}

// BiasTwice is not an order: the exact product rounded to bf16, then the bias added and rounded again.
enum class Order { Exact, Seq, Lanes32, Chunks16, BiasTwice };
const char* order_name(Order o) {
    switch (o) {
    case Order::Exact:
        return "exact";
    case Order::Seq:
        return "seq";
    case Order::Lanes32:
        return "lanes32";
    case Order::Chunks16:
        return "chunks16";
    default:
        return "bias2x";
    }
}

double dot(const float* a, const float* b, int k, Order o) {
    switch (o) {
    case Order::Exact:
    case Order::BiasTwice: {
        double s = 0;
        for (int i = 0; i < k; ++i)
            s += static_cast<double>(a[i]) * b[i];
        return s;
    }
    case Order::Seq: {
        float s = 0;
        for (int i = 0; i < k; ++i)
            s = std::fma(a[i], b[i], s);
        return s;
    }
    case Order::Lanes32: {
        float lane[32] = {};
        for (int i = 0; i < k; ++i)
            lane[i % 32] = std::fma(a[i], b[i], lane[i % 32]);
        for (int off = 16; off > 0; off >>= 1)
            for (int l = 0; l < off; ++l)
                lane[l] += lane[l + off];
        return lane[0];
    }
    default: {
        float acc = 0;
        for (int c = 0; c < k; c += 16) {
            double part = 0;
            for (int i = c; i < std::min(k, c + 16); ++i)
                part += static_cast<double>(a[i]) * b[i];
            acc += static_cast<float>(part);
        }
        return acc;
    }
    }
}

struct Linear {
    std::vector<float> w, b; // w [out, in]; b [out] or empty
    int out = 0, in = 0;
};

// r(x·Wᵀ + b): the bias joins the fp32 sum (exact: the exact sum) before the one rounding.
std::vector<float> linear(const std::vector<float>& x, int rows, const Linear& l, Order o) {
    std::vector<float> y(static_cast<std::size_t>(rows) * l.out);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < l.out; ++c) {
            double s = dot(&x[static_cast<std::size_t>(r) * l.in], &l.w[static_cast<std::size_t>(c) * l.in],
                           l.in, o);
            if (!l.b.empty() && o == Order::BiasTwice)
                s = static_cast<double>(bf(s)) + l.b[c];
            else if (!l.b.empty())
                s = o == Order::Exact ? s + l.b[c] : static_cast<double>(static_cast<float>(s) + l.b[c]);
            y[static_cast<std::size_t>(r) * l.out + c] = bf(s);
        }
    return y;
}

void add_rounded(std::vector<float>& a, const std::vector<float>& b) {
    for (std::size_t i = 0; i < a.size(); ++i)
        a[i] = bf(static_cast<double>(a[i]) + b[i]);
}

constexpr int kM = 1024, kN = 1024, kInter = 128, kRank = 8, kExperts = 8;

struct Layer {
    std::vector<float> x;
    Linear router, gate, up, down, ag, bg, au, bu, ad, bd;
};

Layer draw(unsigned seed) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> normal_d;
    auto normal = [&](std::size_t n) {
        std::vector<float> v(n);
        for (float& e : v)
            e = bf(normal_d(gen));
        return v;
    };
    auto uniform = [&](std::size_t n, int fan_in) {
        std::uniform_real_distribution<double> u(-1, 1);
        std::vector<float> v(n);
        for (float& e : v)
            e = bf(u(gen) / std::sqrt(static_cast<double>(fan_in)));
        return v;
    };
    Layer l;
    l.x = normal(static_cast<std::size_t>(kM) * kN);
    l.router = {normal(kExperts * kN), normal(kExperts), kExperts, kN};
    l.gate = {uniform(kInter * kN, kN), uniform(kInter, kN), kInter, kN};
    l.up = {uniform(kInter * kN, kN), uniform(kInter, kN), kInter, kN};
    l.down = {uniform(kN * kInter, kInter), uniform(kN, kInter), kN, kInter};
    l.ag = {normal(kRank * kN), {}, kRank, kN};
    l.bg = {normal(kInter * kRank), {}, kInter, kRank};
    l.au = {normal(kRank * kN), {}, kRank, kN};
    l.bu = {normal(kInter * kRank), {}, kInter, kRank};
    l.ad = {normal(kRank * kInter), {}, kRank, kInter};
    l.bd = {normal(kN * kRank), {}, kN, kRank};
    return l;
}

// The GEMM groups one run may sum in the other order (bits of a mask).
enum Group {
    kRouter = 1,
    kBase = 2,
    kLoraIn = 4,
    kLoraInterB = 8,
    kDown = 16,
    kLoraDownA = 32,
    kLoraDownB = 64
};

std::vector<float> forward(const Layer& l, Order other, int mask) {
    auto order = [&](int group) { return (mask & group) ? other : Order::Exact; };
    const std::vector<float> logits = linear(l.x, kM, l.router, order(kRouter));
    std::vector<float> w0(kM), w1(kM);
    for (int t = 0; t < kM; ++t) {
        const float* row = &logits[static_cast<std::size_t>(t) * kExperts];
        const float top = *std::max_element(row, row + kExperts);
        float e[kExperts], p[kExperts];
        for (int i = 0; i < kExperts; ++i)
            e[i] = std::exp(row[i] - top);
        const float sum =
            ((e[0] + e[4]) + (e[2] + e[6])) + ((e[1] + e[5]) + (e[3] + e[7])); // torch's warp order
        int first = -1, second = -1;
        for (int i = 0; i < kExperts; ++i) {
            p[i] = bf(e[i] / sum);
            if (first < 0 || p[i] > p[first]) {
                second = first;
                first = i;
            } else if (second < 0 || p[i] > p[second]) {
                second = i;
            }
        }
        w0[t] = p[first];
        w1[t] = p[second];
    }
    std::vector<float> g = linear(l.x, kM, l.gate, order(kBase)), u = linear(l.x, kM, l.up, order(kBase));
    add_rounded(g, linear(linear(l.x, kM, l.ag, order(kLoraIn)), kM, l.bg, order(kLoraInterB)));
    add_rounded(u, linear(linear(l.x, kM, l.au, order(kLoraIn)), kM, l.bu, order(kLoraInterB)));
    std::vector<float> h(g.size());
    for (std::size_t i = 0; i < h.size(); ++i)
        h[i] = bf(static_cast<double>(bf(g[i] / (1.f + std::exp(-g[i])))) * u[i]);
    std::vector<float> y = linear(h, kM, l.down, order(kDown));
    add_rounded(y, linear(linear(h, kM, l.ad, order(kLoraDownA)), kM, l.bd, order(kLoraDownB)));
    std::vector<float> out(y.size());
    for (int t = 0; t < kM; ++t)
        for (int j = 0; j < kN; ++j) {
            const std::size_t i = static_cast<std::size_t>(t) * kN + j;
            out[i] = bf(static_cast<double>(bf(static_cast<double>(w0[t]) * y[i])) +
                        bf(static_cast<double>(w1[t]) * y[i]));
        }
    return out;
}

} // namespace

int main(int argc, char** argv) {
    const unsigned seed = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 1u;
    const Layer layer = draw(seed);
    const std::vector<float> ref = forward(layer, Order::Exact, 0);
    double max_out = 0;
    for (float v : ref)
        max_out = std::max(max_out, static_cast<double>(std::fabs(v)));
    std::printf("seed %u: M = N = %d, max |out| %.3g; failing PKB's rule against every GEMM exact:\n", seed,
                kN, max_out);
    const struct {
        int mask;
        const char* what;
    } runs[] = {{127, "every GEMM"},           {kRouter, "router"},        {kBase, "gate/up base"},
                {kLoraIn, "x·A (K=1024)"},     {kLoraInterB, "·Bᵀ (K=8)"}, {kDown, "down base"},
                {kLoraDownA, "h·A_d (K=128)"}, {kLoraDownB, "·B_dᵀ (K=8)"}};
    for (Order o : {Order::Seq, Order::Lanes32, Order::Chunks16, Order::BiasTwice})
        for (const auto& run : runs) {
            if (o == Order::BiasTwice && run.mask != 127 && run.mask != kRouter && run.mask != kBase &&
                run.mask != kDown)
                continue; // only the GEMMs with a bias
            const std::vector<float> out = forward(layer, o, run.mask);
            long bad = 0;
            double max_err = 0;
            std::vector<char> bad_row(kM, 0);
            for (std::size_t i = 0; i < out.size(); ++i) {
                const double d = std::fabs(static_cast<double>(out[i]) - ref[i]);
                max_err = std::max(max_err, d);
                if (d > 1e-2 + 1e-2 * std::fabs(ref[i])) {
                    ++bad;
                    bad_row[i / kN] = 1;
                }
            }
            std::printf("  %-8s %-14s: %6ld of %d elements fail (%d rows), max abs error %.3g\n",
                        order_name(o), run.what, bad, kM * kN,
                        static_cast<int>(std::count(bad_row.begin(), bad_row.end(), 1)), max_err);
            std::fflush(stdout);
        }
    return 0;
}
