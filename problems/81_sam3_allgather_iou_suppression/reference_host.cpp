// Host oracle for PKB problem 81: the masks and scores as fp32 (exact from every dtype), the uneven
// all-gather by tk::all_gather_v_host with the list's counts, binary masks, intersections as exact
// integer counts, then tk::overlap_suppressed (mask_suppression.h, the reference's rule) and the
// suppressed masks set to -10.
#include "pkbw/solution.h"
#include "pkbw/toolkit/all_gather_v_host.h"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/mask_suppression.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace {

// t's elements as fp32, gathered from every rank in rank order (counts: objects per rank).
std::vector<float> gather_as_f32(const pkbw::Context& ctx, const pkbw::TensorView& t,
                                 const std::vector<long long>& counts) {
    const std::vector<double> wide = pkbw::tk::to_f64(t);
    const std::vector<float> mine(wide.begin(), wide.end());
    const long long per_object = t.numel() / std::max<long long>(t.shape[0], 1);
    std::vector<long long> items;
    for (const long long c : counts) {
        items.push_back(c * per_object);
    }
    const std::vector<std::byte> all =
        pkbw::tk::all_gather_v_host(ctx, mine.data(), t.numel(), items, sizeof(float));
    std::vector<float> out(all.size() / sizeof(float));
    std::memcpy(out.data(), all.data(), all.size());
    return out;
}

// inter[i, j] = pixels set in both binary masks i and j (exact counts, as fp32 values).
std::vector<float> intersections(const std::vector<float>& masks, long long n, long long pixels) {
    std::vector<unsigned char> binary(masks.size());
    for (std::size_t i = 0; i < masks.size(); ++i) {
        binary[i] = masks[i] > 0.0f ? 1 : 0;
    }
    std::vector<float> inter(static_cast<std::size_t>(n * n));
    for (long long i = 0; i < n; ++i) {
        for (long long j = i; j < n; ++j) {
            long long both = 0;
            for (long long p = 0; p < pixels; ++p) {
                both += binary[i * pixels + p] & binary[j * pixels + p];
            }
            inter[i * n + j] = inter[j * n + i] = static_cast<float>(both);
        }
    }
    return inter;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& masks = ctx.input(0);
    const std::vector<long long> counts = pkbw::tk::rank_list(ctx, "num_obj_per_gpu");
    if (counts.empty() || counts[static_cast<std::size_t>(ctx.rank)] != masks.shape[0] ||
        ctx.input(1).shape[0] != masks.shape[0]) {
        return ctx.fail("81 oracle: local mask count does not match num_obj_per_gpu");
    }
    const long long n = pkbw::tk::total_of(counts), pixels = masks.shape[1] * masks.shape[2];
    std::vector<float> all_masks = gather_as_f32(ctx, masks, counts);
    const std::vector<float> all_scores = gather_as_f32(ctx, ctx.input(1), counts);
    if (static_cast<long long>(all_scores.size()) != n || n != ctx.output(0).shape[0] ||
        ctx.input(2).shape[0] != n) {
        return ctx.fail(
            "81 oracle: the gathered objects do not match num_obj_per_gpu, last_occluded and the outputs");
    }
    const std::vector<float> inter = intersections(all_masks, n, pixels);
    const auto threshold = static_cast<float>(ctx.param("iou_threshold", 0.7));
    const bool reverse = ctx.param("reverse", 0.0) != 0.0;
    const auto* last = ctx.input(2).as<const long long>();
    bool* suppressed = ctx.output(2).as<bool>();
    for (long long k = 0; k < n; ++k) {
        suppressed[k] = pkbw::tk::overlap_suppressed(static_cast<int>(k), static_cast<int>(n), inter.data(),
                                                     last, threshold, reverse);
        if (suppressed[k]) {
            std::fill_n(all_masks.begin() + k * pixels, pixels, -10.0f);
        }
    }
    std::memcpy(ctx.output(0).data, all_masks.data(), sizeof(float) * all_masks.size());
    std::memcpy(ctx.output(1).data, all_scores.data(), sizeof(float) * all_scores.size());
    return 0;
}
