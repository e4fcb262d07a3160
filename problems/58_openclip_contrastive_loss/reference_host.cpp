// Host oracle for PKB problem 58: every rank's text block gathered, then the rank's terms in PKB's ring
// order (own block; r+s and r-s for s = 1..floor((W-1)/2); r+W/2 when W is even), each computed in
// double and rounded to D where torch stores a tensor: the scaled image, the logits GEMM, the bias add,
// the logsigmoid, its sum, the division and each add into the loss.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

namespace tk = pkbw::tk;

double log_sigmoid(double x) {
    return std::min(x, 0.0) - std::log1p(std::exp(-std::fabs(x)));
}

// -sum(logsigmoid(label * (scaled_image @ textᵀ + bias))) / B, rounded to D op by op.
double siglip_term(pkbw::DType dtype, const std::vector<double>& scaled_image, const double* text,
                   long long b, long long d, double bias, bool positives) {
    const std::vector<double> block(text, text + b * d);
    const std::vector<double> logits = tk::gemm_rounded(scaled_image, block, b, b, d, dtype, false, true);
    double sum = 0;
    for (long long i = 0; i < b; ++i) {
        for (long long j = 0; j < b; ++j) {
            const double logit = tk::round_to(dtype, logits[i * b + j] + bias);
            sum += tk::round_to(dtype, log_sigmoid(positives && i == j ? logit : -logit));
        }
    }
    return tk::round_to(dtype, -tk::round_to(dtype, sum) / static_cast<double>(b));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& image = ctx.input(0);
    const pkbw::DType dtype = image.dtype;
    const long long b = image.shape[0], d = image.shape[1];
    const int world = ctx.world_size, rank = ctx.rank;
    const double scale = ctx.param("logit_scale", 10.0), bias = ctx.param("logit_bias", 0.0);
    std::vector<double> scaled = tk::to_f64(image);
    for (double& v : scaled)
        v = tk::round_to(dtype, scale * v);
    const std::vector<double> texts = tk::all_gather_f64(ctx, tk::to_f64(ctx.input(1)));
    auto text_of = [&](int r) {
        return texts.data() + static_cast<long long>((r % world + world) % world) * b * d;
    };

    double loss = siglip_term(dtype, scaled, text_of(rank), b, d, bias, true);
    std::vector<int> order;
    for (int s = 1; s <= (world - 1) / 2; ++s) {
        order.push_back(rank + s); // from the right
        order.push_back(rank - s); // from the left
    }
    if (world % 2 == 0 && world > 1)
        order.push_back(rank + world / 2);
    for (int r : order)
        loss = tk::round_to(dtype, loss + siglip_term(dtype, scaled, text_of(r), b, d, bias, false));
    tk::store(ctx.output(0), 0, loss);
    return 0;
}
