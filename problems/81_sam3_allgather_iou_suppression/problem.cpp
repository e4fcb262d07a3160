// PKB problem 81: SAM3's cross-GPU mask suppression: an uneven all-gather of every rank's object masks
// and scores (1-3 objects per rank, by trial), a binary-mask IoU matrix by matmul, and the suppression
// of overlapping objects by their last-occluded frame (suppressed masks set to -10).
#include "problem_util.h"

#include <string>
#include <vector>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kSide = 256; // PKB's 256 x 256 low-resolution masks, whatever M and N
constexpr double kIouThreshold = 0.7;

// PKB's counts: rank i holds 1 + (i + trial) % 3 objects.
std::vector<std::int64_t> object_counts(const ProblemConfig& c) {
    std::vector<std::int64_t> counts;
    for (int i = 0; i < c.world_size; ++i) {
        counts.push_back(1 + (i + c.trial) % 3);
    }
    return counts;
}
std::int64_t total_objects(const ProblemConfig& c) {
    std::int64_t total = 0;
    for (const std::int64_t count : object_counts(c)) {
        total += count;
    }
    return total;
}

// v rounded to the dtype, as a torch op on a D tensor stores it.
double rounded(DType dtype, double v) {
    std::byte element[8];
    f64_to_element(dtype, v, element);
    return element_to_f64(dtype, element);
}

// PKB: masks = randn + ((y + x + object + rank) % 5 == 0) * 4.0 - 1.0, each op in the dtype. Exact mode
// replaces the normal draw with k/4 values (the masks' sign pattern is what matters).
void fill_masks(const ProblemConfig& c, int rank, Tensor& masks) {
    Tensor noise = Tensor::zeros(c.dtype, masks.shape());
    std::vector<Tensor> draw{noise};
    fill_random_inputs(c, 81, rank, draw);
    std::vector<double> values(static_cast<std::size_t>(masks.numel()));
    for (std::int64_t i = 0; i < masks.numel(); ++i) {
        const std::int64_t object = i / (kSide * kSide), y = i / kSide % kSide, x = i % kSide;
        const double pattern = (y + x + object + rank) % 5 == 0 ? 4.0 : 0.0;
        values[static_cast<std::size_t>(i)] =
            rounded(c.dtype, rounded(c.dtype, draw[0].get_f64(i) + pattern) - 1.0);
    }
    fill_values(masks, values);
}

// torch.linspace(-5, 5, count): -5 and 5 at the ends, 0 between for three.
std::vector<double> scores_of(std::int64_t count) {
    std::vector<double> scores;
    for (std::int64_t i = 0; i < count; ++i) {
        scores.push_back(count == 1 ? -5.0 : -5.0 + 10.0 * static_cast<double>(i) / (count - 1));
    }
    return scores;
}

constexpr const char* kDescription =
    "Rank i holds c_i = 1 + (i + trial) % 3 objects: low_res_masks_local [c_i, 256, 256] (randn + 4 on the "
    "pattern (y + x + object + rank) % 5 == 0, - 1; each op in the dtype), obj_scores_local [c_i] "
    "(linspace(-5, 5)), and every rank last_occluded [S] int64 ((arange(S) % 5) - 1), S = sum of c_i. "
    "Every rank all-gathers the masks and scores as fp32 (uneven: counts from the list param "
    "num_obj_per_gpu), binarises the masks (> 0), computes the IoU matrix (intersections by matmul, "
    "union clamped at 1, fp32), and suppresses object k when an overlapping object j (IoU >= "
    "iou_threshold) has last_occluded[j] > -1 and last_occluded[k] > last_occluded[j] (< when reverse); "
    "suppressed masks become -10. Returns (masks fp32 [S, 256, 256], scores fp32 [S], suppressed bool "
    "[S]). Params num_obj_per_gpu (list), iou_threshold = 0.7, reverse = 0.";

class MaskSuppression final : public BasicProblem {
public:
    MaskSuppression()
        : BasicProblem({.id = 81,
                        .stem = "81_sam3_allgather_iou_suppression",
                        .category = "DOM",
                        .title = "SAM3 mask suppression: uneven all-gather of masks, IoU matmul, suppression",
                        .description = kDescription}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int rank) const override {
        const std::int64_t count = object_counts(c)[static_cast<std::size_t>(rank)];
        return {{"low_res_masks_local", c.dtype, {count, kSide, kSide}},
                {"obj_scores_local", c.dtype, {count}},
                {"last_occluded", DType::I64, {total_objects(c)}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const std::int64_t total = total_objects(c);
        return {{"output_0", DType::F32, {total, kSide, kSide}},
                {"output_1", DType::F32, {total}},
                {"output_2", DType::Bool, {total}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_masks(c, rank, inputs[0]);
        fill_values(inputs[1], scores_of(inputs[1].numel()));
        std::vector<double> last(static_cast<std::size_t>(inputs[2].numel()));
        for (std::size_t i = 0; i < last.size(); ++i) {
            last[i] = static_cast<double>(static_cast<std::int64_t>(i) % 5 - 1);
        }
        fill_values(inputs[2], last);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const auto counts = object_counts(c);
        std::map<std::string, double> params = {{"iou_threshold", kIouThreshold}, {"reverse", 0.0}};
        add_list_param(params, "num_obj_per_gpu", std::vector<double>(counts.begin(), counts.end()));
        return params;
    }
    // nccl-tests' all-gather of the fp32 masks and scores; the IoU matmul S x S x 65536.
    WorkModel work(const ProblemConfig& c) const override {
        const double total = static_cast<double>(total_objects(c)), pixels = kSide * kSide;
        WorkModel model;
        model.collective = CollectiveKind::AllGather;
        model.collective_bytes = total * (pixels + 1) * 4;
        model.flops = 2 * total * total * pixels;
        model.memory_bytes = 3 * model.collective_bytes;
        return model;
    }
};

} // namespace

const Problem& problem_81() {
    static const MaskSuppression problem;
    return problem;
}

} // namespace pkbw::problems
