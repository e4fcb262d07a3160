// Hand-written sample candidate (not LLM output)
// PKB 81 (uneven all-gather of every rank's masks [c_r, H, W] and scores [c_r] as fp32, binary masks
// (> 0), IoU by intersection counts, object k suppressed when an object j with IoU >= iou_threshold has
// last_occluded[j] > -1 and last_occluded[k] > last_occluded[j]; suppressed masks become -10) on the
// host backend: each rank writes its masks and scores as fp32 into a symmetric buffer, barrier, every
// rank copies all of them in rank order (counts from num_obj_per_gpu) and decides the suppression
// itself, barrier.
#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

#include <cstring>
#include <string>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& masks = ctx.input(0);
    const pkbw::TensorView& scores = ctx.input(1);
    const long long* last = ctx.input(2).as<const long long>();
    const int world = ctx.world_size;
    double list[pkbw::kMaxRanks];
    if (ctx.param_list("num_obj_per_gpu", list, pkbw::kMaxRanks) != world) {
        return ctx.fail("num_obj_per_gpu must have one entry per rank");
    }
    long long most = 0, total = 0;
    std::vector<long long> counts(world);
    for (int r = 0; r < world; ++r) {
        counts[r] = static_cast<long long>(list[r]);
        most = counts[r] > most ? counts[r] : most;
        total += counts[r];
    }
    const long long pixels = masks.shape[1] * masks.shape[2], mine = masks.shape[0];
    // Symmetric layout per rank: `most` masks, then `most` scores, all fp32. One buffer per size: the
    // counts change with the trial, and a buffer cannot grow.
    const pkbw::SymmetricMemory sym =
        ctx.symmetric(("sam81_host_" + std::to_string(most)).c_str(), sizeof(float) * most * (pixels + 1));
    float* local = static_cast<float*>(sym.local);
    const std::size_t size = pkbw::element_size(masks.dtype), score_size = pkbw::element_size(scores.dtype);
    for (long long i = 0; i < mine * pixels; ++i) {
        local[i] = pkbw::element_to_f32(masks.dtype, static_cast<const std::byte*>(masks.data) + i * size);
    }
    for (long long i = 0; i < mine; ++i) {
        local[most * pixels + i] =
            pkbw::element_to_f32(scores.dtype, static_cast<const std::byte*>(scores.data) + i * score_size);
    }
    ctx.barrier();
    float* out_masks = ctx.output(0).as<float>();
    float* out_scores = ctx.output(1).as<float>();
    long long at = 0;
    for (int r = 0; r < world; ++r) {
        const float* peer = static_cast<const float*>(sym.peers[r]);
        std::memcpy(out_masks + at * pixels, peer, sizeof(float) * counts[r] * pixels);
        std::memcpy(out_scores + at, peer + most * pixels, sizeof(float) * counts[r]);
        at += counts[r];
    }
    ctx.barrier(); // nobody overwrites the buffer while a peer still reads it
    std::vector<float> area(total, 0.0f), inter(total * total, 0.0f);
    for (long long i = 0; i < total; ++i) {
        for (long long j = i; j < total; ++j) {
            long long both = 0;
            for (long long p = 0; p < pixels; ++p) {
                both += (out_masks[i * pixels + p] > 0.0f) && (out_masks[j * pixels + p] > 0.0f);
            }
            inter[i * total + j] = inter[j * total + i] = static_cast<float>(both);
        }
        area[i] = inter[i * total + i];
    }
    const float threshold = static_cast<float>(ctx.param("iou_threshold", 0.7));
    const bool reverse = ctx.param("reverse", 0.0) != 0.0;
    bool* suppressed = ctx.output(2).as<bool>();
    for (long long k = 0; k < total; ++k) {
        suppressed[k] = false;
    }
    for (long long i = 0; i < total; ++i) {
        for (long long j = i + 1; j < total; ++j) {
            float uni = area[i] + area[j] - inter[i * total + j];
            const float iou = inter[i * total + j] / (uni < 1.0f ? 1.0f : uni);
            if (!(iou >= threshold)) {
                continue;
            }
            const bool i_later = reverse ? last[i] < last[j] : last[i] > last[j];
            const bool j_later = reverse ? last[j] < last[i] : last[j] > last[i];
            if (i_later && last[j] > -1) {
                suppressed[i] = true;
            }
            if (j_later && last[i] > -1) {
                suppressed[j] = true;
            }
        }
    }
    for (long long k = 0; k < total; ++k) {
        if (suppressed[k]) {
            for (long long p = 0; p < pixels; ++p) {
                out_masks[k * pixels + p] = -10.0f;
            }
        }
    }
    return 0;
}
