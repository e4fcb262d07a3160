// Throughput of compare_tensors on a 256 MiB pair (128 Mi elements a side, bf16), as the evaluation
// sees it after loading two rank outputs: f32 and strided bf16 are measured too. GB/s counts the
// bytes of both tensors (ref + cand) read per second; "per side" is half of that.
#include "pkbw/core/compare.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

namespace {

using pkbw::DType;
using pkbw::Tensor;

constexpr std::int64_t kRows = 8192, kCols = 16384; // 128 Mi elements

// Fills ref with pseudo-random values and cand with ref plus a small relative error, with a few
// deliberate mismatches. A cheap xorshift keeps setup fast; the values only need to look like data.
void fill(std::vector<float>& ref, std::vector<float>& cand) {
    std::uint64_t s = 0x9E3779B97F4A7C15ull;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        const float u = static_cast<float>(static_cast<std::int32_t>(s >> 32)) * 0x1p-31f; // [-1, 1)
        ref[i] = u * 4.0f;
        cand[i] = ref[i] * (1.0f + 0x1p-9f * static_cast<float>(static_cast<std::int8_t>(s) >> 6));
    }
    for (std::size_t i = 12345; i < ref.size(); i += ref.size() / 7) {
        cand[i] = ref[i] + 1.0f;
    }
}

Tensor to_dtype(const std::vector<float>& v, DType dtype, pkbw::Shape shape) {
    Tensor t = Tensor::zeros(dtype, std::move(shape));
    if (dtype == DType::F32) {
        std::memcpy(t.mutable_data(), v.data(), v.size() * 4);
        return t;
    }
    auto* out = t.mutable_data_as<std::uint16_t>();
    for (std::size_t i = 0; i < v.size(); ++i) {
        out[i] = pkbw::f32_to_bf16(v[i]);
    }
    return t;
}

// CPU time of this thread: on a shared machine wall time also counts other processes' turns.
double thread_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

void run(const char* label, const Tensor& ref, const Tensor& cand, int repeats) {
    std::vector<double> wall, cpu;
    pkbw::TensorComparison last;
    for (int i = 0; i < repeats; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = thread_seconds();
        last = pkbw::compare_tensors(ref, cand, {});
        cpu.push_back(thread_seconds() - c0);
        wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double w = median(wall), c = median(cpu);
    const double both = static_cast<double>(ref.nbytes() + cand.nbytes());
    std::printf("%-30s wall %7.1f ms %5.2f GB/s | cpu %7.1f ms %5.2f GB/s ref+cand, %5.2f GB/s per side | "
                "mismatches=%lld/%lld max_abs=%.4g\n",
                label, w * 1e3, both / w / 1e9, c * 1e3, both / c / 1e9, both / 2 / c / 1e9,
                static_cast<long long>(last.mismatch_count), static_cast<long long>(last.numel),
                last.max_abs_error);
}

} // namespace

int main(int argc, char** argv) {
    const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
    std::vector<float> ref(kRows * kCols), cand(kRows * kCols);
    fill(ref, cand);
    std::printf("compare_tensors, %lld x %lld elements, median of %d runs, one thread\n",
                static_cast<long long>(kRows), static_cast<long long>(kCols), repeats);
    {
        const Tensor a = to_dtype(ref, DType::BF16, {kRows, kCols});
        const Tensor b = to_dtype(cand, DType::BF16, {kRows, kCols});
        run("bf16 contiguous (256 MiB/side)", a, b, repeats);
        // The same elements viewed as the transpose of a [kCols, kRows] tensor: every read is a
        // 32 KiB jump, the worst case for caches and TLB. Run fewer times: it is slow.
        const Tensor at = Tensor::view(a.storage(), DType::BF16, {kCols, kRows}, {1, kCols});
        const Tensor bt = Tensor::view(b.storage(), DType::BF16, {kCols, kRows}, {1, kCols});
        run("bf16 transposed view", at, bt, std::min(repeats, 3));
    }
    {
        // Every other column of a [kRows, 2 * kCols] buffer (x[:, ::2]): strided, but cache friendly.
        std::vector<float> wide_ref(2 * ref.size()), wide_cand(2 * ref.size());
        for (std::size_t i = 0; i < ref.size(); ++i) {
            wide_ref[2 * i] = ref[i];
            wide_cand[2 * i] = cand[i];
        }
        const Tensor a = to_dtype(wide_ref, DType::BF16, {kRows, 2 * kCols});
        const Tensor b = to_dtype(wide_cand, DType::BF16, {kRows, 2 * kCols});
        const Tensor as = Tensor::view(a.storage(), DType::BF16, {kRows, kCols}, {2 * kCols, 2});
        const Tensor bs = Tensor::view(b.storage(), DType::BF16, {kRows, kCols}, {2 * kCols, 2});
        run("bf16 strided x[:, ::2]", as, bs, repeats);
    }
    {
        const Tensor a = to_dtype(ref, DType::F32, {kRows, kCols});
        const Tensor b = to_dtype(cand, DType::F32, {kRows, kCols});
        run("f32 contiguous (512 MiB)", a, b, repeats);
    }
    return 0;
}
