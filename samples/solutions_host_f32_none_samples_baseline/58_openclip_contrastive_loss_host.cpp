// Hand-written sample candidate (not LLM output)
// PKB 58 (image_features, text_features [B, D] per rank; logit_scale, logit_bias params): the SigLIP
// loss of the own block (+1 labels on the diagonal, -1 elsewhere) plus the negatives-only loss of every
// other rank's text block, in the bidirectional ring's order (r+1, r-1, r+2, r-2, ..., then r+W/2 when W
// is even), on the host backend, fp32. The text block goes into a symmetric buffer and the peers' blocks
// are read in place.
#include "pkbw/solution.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace {

float block_loss(const float* image, const float* text, long long b, long long d, float scale, float bias,
                 bool positives) {
    float sum = 0.f;
    for (long long i = 0; i < b; ++i) {
        for (long long j = 0; j < b; ++j) {
            float dot = 0.f;
            for (long long k = 0; k < d; ++k)
                dot += scale * image[i * d + k] * text[j * d + k];
            const float logit = dot + bias;
            const float z = positives && i == j ? logit : -logit;
            sum += std::min(z, 0.f) - std::log1p(std::exp(-std::fabs(z)));
        }
    }
    return -sum / static_cast<float>(b);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32");
    }
    const long long b = ctx.input(0).shape[0], d = ctx.input(0).shape[1];
    const float scale = static_cast<float>(ctx.param("logit_scale", 10.0));
    const float bias = static_cast<float>(ctx.param("logit_bias", 0.0));
    const pkbw::SymmetricMemory texts = ctx.symmetric("siglip58_text", ctx.input(1).nbytes());
    std::memcpy(texts.local, ctx.input(1).data, ctx.input(1).nbytes());
    ctx.barrier();
    const int w = ctx.world_size, r = ctx.rank;
    const float* image = ctx.input(0).as<float>();
    auto text_of = [&](int peer) { return static_cast<const float*>(texts.peers[(peer % w + w) % w]); };
    float loss = block_loss(image, text_of(r), b, d, scale, bias, true);
    for (int s = 1; s <= (w - 1) / 2; ++s) {
        loss += block_loss(image, text_of(r + s), b, d, scale, bias, false);
        loss += block_loss(image, text_of(r - s), b, d, scale, bias, false);
    }
    if (w % 2 == 0 && w > 1) {
        loss += block_loss(image, text_of(r + w / 2), b, d, scale, bias, false);
    }
    *ctx.output(0).as<float>() = loss;
    ctx.barrier(); // peers may still read this rank's text
    return 0;
}
