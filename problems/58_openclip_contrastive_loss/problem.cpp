// PKB problem 58: OpenCLIP's SigLIP loss with the text features passed around a bidirectional ring.
// Each rank adds the loss of its own image/text block (positives on the diagonal) and the
// negatives-only loss of every other rank's text block, in PKB's ring order.
#include "problem_util.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace pkbw::problems {
namespace {

constexpr double kLogitScale = 10.0, kLogitBias = -10.0;

// PKB: B_local = max(1, M/W) rows per rank, feature dim D = max(16, N).
std::int64_t local_batch(const ProblemConfig& c) {
    return std::max<std::int64_t>(1, c.m / c.world_size);
}
std::int64_t feature_dim(const ProblemConfig& c) {
    return std::max<std::int64_t>(16, c.n);
}

double rounded(DType dtype, double value) {
    std::byte element[8];
    f64_to_element(dtype, value, element);
    return element_to_f64(dtype, element);
}

// F.normalize(x, dim=-1) on a D tensor: the row norm is stored in D (torch's norm kernel accumulates in
// fp32 and writes D), clamped at eps = 1e-12, then each element divided and rounded to D.
void normalize_rows(Tensor& tensor, std::int64_t rows, std::int64_t dim) {
    const DType dtype = tensor.dtype();
    std::vector<double> values = tensor.to_f64();
    for (std::int64_t r = 0; r < rows; ++r) {
        double* row = values.data() + r * dim;
        double squares = 0;
        for (std::int64_t j = 0; j < dim; ++j)
            squares += row[j] * row[j];
        const double norm = std::max(rounded(dtype, std::sqrt(squares)), 1e-12);
        for (std::int64_t j = 0; j < dim; ++j)
            row[j] = row[j] / norm;
    }
    fill_values(tensor, values);
}

class OpenClipContrastiveLoss final : public BasicProblem {
public:
    OpenClipContrastiveLoss()
        : BasicProblem({.id = 58,
                        .stem = "58_openclip_contrastive_loss",
                        .category = "DOM",
                        .title = "SigLIP contrastive loss over a bidirectional ring of text features",
                        .description =
                            "image_features and text_features [B, D] per rank (B = max(1, M/W), D = max(16, "
                            "N); standard normal rows L2-normalised in D), logit_scale = 10, logit_bias = "
                            "-10. loss = SigLIP(image, own text, positives on the diagonal), then "
                            "+ the negatives-only loss against rank r+s's and r-s's text for s = 1.."
                            "floor((W-1)/2), then + rank r+W/2's when W is even. Each term is "
                            "-sum(logsigmoid(label * (scale * image @ text^T + bias))) / B with every "
                            "op rounded to D. Output: 0-dim D per rank."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Shape shape{local_batch(c), feature_dim(c)};
        return {{"image_features", c.dtype, shape}, {"text_features", c.dtype, shape}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {}}};
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"logit_scale", kLogitScale}, {"logit_bias", kLogitBias}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
        for (Tensor& t : inputs)
            normalize_rows(t, local_batch(c), feature_dim(c));
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double b = static_cast<double>(local_batch(c)), d = static_cast<double>(feature_dim(c));
        const double w = static_cast<double>(c.world_size), e = elem_bytes(c);
        return {.collective = CollectiveKind::None,
                .collective_bytes = (w - 1) * b * d * e, // every other rank's text block arrives once
                .flops = w * (2 * b * b * d + 8 * b * b),
                .memory_bytes = (w + 1) * b * d * e};
    }
};

} // namespace

const Problem& problem_58() {
    static const OpenClipContrastiveLoss problem;
    return problem;
}

} // namespace pkbw::problems
