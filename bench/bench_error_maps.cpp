// The error-map pass (core/compare_maps.h) on an 8192 x 8192 f32 pair pooled to 512 x 512, the
// heatmaps' size: wall and CPU time (all threads) of maps::analyse_error with both value maps.
// The figure to keep is about 200 ms wall (docs/comparison.md "Error maps for the GUI").
//   build/bin/pkbw_bench_error_maps
#include "pkbw/core/compare_maps.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <limits>
#include <random>

using namespace pkbw;

int main() {
    const std::int64_t side = 8192;
    Tensor ref = Tensor::zeros(DType::F32, {side, side});
    Tensor cand = Tensor::zeros(DType::F32, {side, side});
    {
        std::mt19937 rng(1);
        std::normal_distribution<float> normal;
        float* r = ref.mutable_data_as<float>();
        float* c = cand.mutable_data_as<float>();
        for (std::int64_t i = 0; i < side * side; ++i) {
            r[i] = normal(rng);
            c[i] = r[i] + 1e-4f * normal(rng);
        }
        c[123456] += 1.0f;
        c[side * side - 7] = std::numeric_limits<float>::quiet_NaN();
    }
    for (int round = 0; round < 5; ++round) {
        const auto start = std::chrono::steady_clock::now();
        const std::clock_t cpu_start = std::clock();
        maps::PooledMap ref_values, cand_values;
        const maps::ErrorAnalysis a =
            maps::analyse_error(ref, cand, 1e-2, 1e-2, 512, &ref_values, &cand_values);
        const double wall_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        const double cpu_ms = 1e3 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
        std::printf("8192x8192 f32 error maps (512x512: ratio, diff, |diff|, counts, worst, both values): "
                    "%.1f ms wall, %.1f ms CPU (%lld mismatches, max |diff| %.3g)\n",
                    wall_ms, cpu_ms, static_cast<long long>(a.mismatch_count), a.max_abs_diff);
    }
    return 0;
}
