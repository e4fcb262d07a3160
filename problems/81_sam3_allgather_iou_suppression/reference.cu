// Reference for PKB problem 81: the local masks and scores widened to fp32, an uneven all-gather of
// each (tk::all_gather_v with the list's counts: PKB's all_gather into per-rank chunks, concatenated),
// the masks binarised, the intersections as one fp32 GEMM (tk::linear: B·Bᵀ; 0/1 products and counts
// below 2^24, so exact), then tk::overlap_suppressed per object (mask_suppression.h) and the
// suppressed rows set to -10.
#include "pkbw/solution.h"
#include "pkbw/toolkit/all_gather_v.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/mask_suppression.h"
#include "pkbw/toolkit/sample_sort.cuh" // dispatch_sortable: dispatch_float with f64
#include "pkbw/toolkit/types.cuh"

#include <type_traits>
#include <vector>

namespace {

constexpr float kNoObjectLogit = -10.0f;

// PKB's .float(): exact from bf16 and f16, rounded from f64.
template <class T>
__global__ void widen(const T* in, long long n, float* out) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        if constexpr (std::is_same_v<T, double>) {
            out[i] = static_cast<float>(in[i]);
        } else {
            out[i] = pkbw::tk::to_float(in[i]);
        }
    }
}

__global__ void binarise(const float* masks, long long n, float* binary) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        binary[i] = masks[i] > 0.0f ? 1.0f : 0.0f;
    }
}

__global__ void decide(const float* inter, const long long* last_occluded, int n, float threshold,
                       bool reverse, bool* suppressed) {
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        suppressed[k] = pkbw::tk::overlap_suppressed(k, n, inter, last_occluded, threshold, reverse);
    }
}

__global__ void blank_suppressed(const bool* suppressed, long long pixels, long long n, float* masks) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n * pixels; i += PKBW_GRID_STRIDE_STEP) {
        if (suppressed[i / pixels]) {
            masks[i] = kNoObjectLogit;
        }
    }
}

// masks and scores of this rank as fp32, in scratch.
int widen_inputs(const pkbw::Context& ctx, float* masks, float* scores) {
    const pkbw::TensorView& m = ctx.input(0);
    const pkbw::TensorView& s = ctx.input(1);
    return pkbw::tk::dispatch_sortable(ctx, m.dtype, "81 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        widen<<<pkbw::tk::grid_for(m.numel()), 256, 0, ctx.stream()>>>(m.as<const T>(), m.numel(), masks);
        widen<<<1, 256, 0, ctx.stream()>>>(s.as<const T>(), s.numel(), scores);
        PKBW_CHECK(ctx, cudaGetLastError());
        return 0;
    });
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& masks = ctx.input(0);
    const std::vector<long long> counts = pkbw::tk::rank_list(ctx, "num_obj_per_gpu");
    const long long mine = masks.shape[0];
    if (counts.empty() || counts[static_cast<std::size_t>(ctx.rank)] != mine ||
        ctx.input(1).shape[0] != mine) {
        return ctx.fail("81 reference: local mask count does not match num_obj_per_gpu");
    }
    const long long n = pkbw::tk::total_of(counts), pixels = masks.shape[1] * masks.shape[2];
    if (n != ctx.output(0).shape[0] || n != ctx.input(2).shape[0] || n > 1 << 16) {
        return ctx.fail("81 reference: num_obj_per_gpu does not match last_occluded and the outputs");
    }
    auto* local = static_cast<float*>(ctx.scratch("sam81_local", sizeof(float) * ((mine + 1) * pixels)));
    float* local_scores = local + mine * pixels;
    PKBW_TRY(widen_inputs(ctx, local, local_scores));
    float* all_masks = ctx.output(0).as<float>();
    std::vector<long long> mask_items; // each rank's masks, in floats
    for (const long long c : counts) {
        mask_items.push_back(c * pixels);
    }
    PKBW_TRY(
        pkbw::tk::all_gather_v(ctx, ctx.nccl(), local, mine * pixels, all_masks, mask_items, sizeof(float)));
    PKBW_TRY(pkbw::tk::all_gather_v(ctx, ctx.nccl(), local_scores, mine, ctx.output(1).data, counts,
                                    sizeof(float)));

    auto* binary = static_cast<float*>(ctx.scratch("sam81_binary", sizeof(float) * (n * pixels + n * n)));
    float* inter = binary + n * pixels;
    binarise<<<pkbw::tk::grid_for(n * pixels), 256, 0, ctx.stream()>>>(all_masks, n * pixels, binary);
    PKBW_CHECK(ctx, cudaGetLastError());
    PKBW_TRY(pkbw::tk::linear(ctx, pkbw::DType::F32, n, pixels, n, binary, binary, nullptr, inter));
    bool* suppressed = ctx.output(2).as<bool>();
    const auto threshold = static_cast<float>(ctx.param("iou_threshold", 0.7));
    const bool reverse = ctx.param("reverse", 0.0) != 0.0;
    decide<<<1, 256, 0, ctx.stream()>>>(inter, ctx.input(2).as<const long long>(), static_cast<int>(n),
                                        threshold, reverse, suppressed);
    blank_suppressed<<<pkbw::tk::grid_for(n * pixels), 256, 0, ctx.stream()>>>(suppressed, pixels, n,
                                                                               all_masks);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}
