#include "normal_fill.h"

#include "pkbw/core/dtype.h"
#include "pkbw/core/error.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <numbers>
#include <thread>
#include <vector>

namespace pkbw::problems {
namespace {

// cos(y) on [0, pi/2] by its Taylor series to y^20: the first omitted term is below 2^-55 and the
// evaluation's rounding a few 2^-53, absolute (the bound below needs no more). Two Horner chains in y^4
// (even and odd powers of y^2) halve the latency of one.
double cos_poly(double y) {
    const double z = y * y, z2 = z * z;
    constexpr double c[11] = {1.0,
                              -1.0 / 2.0,
                              1.0 / 24.0,
                              -1.0 / 720.0,
                              1.0 / 40320.0,
                              -1.0 / 3628800.0,
                              1.0 / 479001600.0,
                              -1.0 / 87178291200.0,
                              1.0 / 20922789888000.0,
                              -1.0 / 6402373705728000.0,
                              1.0 / 2432902008176640000.0}; // (-1)^k / (2k)!
    double even = c[10], odd = c[9];
    for (int k = 8; k >= 0; k -= 2) {
        even = even * z2 + c[k];
    }
    for (int k = 7; k >= 1; k -= 2) {
        odd = odd * z2 + c[k];
    }
    return even + z * odd;
}

// How the fast value is rounded to the tensor's element (f64_to_element's rule for that dtype): a
// monotone map, so equal roundings of v - B and v + B are the rounding of any value between.
struct ToBf16 {
    using Element = std::uint16_t;
    static Element round(double v) { return f32_to_bf16(static_cast<float>(v)); }
};
struct ToF16 {
    using Element = std::uint16_t;
    static Element round(double v) { return f32_to_f16(static_cast<float>(v)); }
};
struct ToF32 {
    using Element = float;
    static Element round(double v) { return static_cast<float>(v); }
};

// Elements [begin, end). The fast value differs from normal()'s only in the cosine (the radius is the
// same expression): by at most R 2^-49 from the cosines and a few ulps of v from the products, so
// B = (R + |v|) 2^-46 bounds it with room to spare.
template <class To>
void fill_range(std::byte* data, const CounterRng& rng, std::int64_t begin, std::int64_t end) {
    auto* out = reinterpret_cast<typename To::Element*>(data);
    for (std::int64_t i = begin; i < end; ++i) {
        const auto index = static_cast<std::uint64_t>(i);
        const auto [u1, u2] = rng.normal_uniforms(index);
        const double radius = std::sqrt(-2.0 * std::log(u1));
        const double v = radius * cos_two_pi(u2);
        const double bound = (radius + std::abs(v)) * 0x1.0p-46;
        const typename To::Element low = To::round(v - bound), high = To::round(v + bound);
        // bound == 0 where u1 = 1: a zero radius, whose sign the two cosines could set differently
        const typename To::Element element =
            bound != 0 && std::memcmp(&low, &high, sizeof low) == 0 ? low : To::round(rng.normal(index));
        std::memcpy(out + i, &element, sizeof element);
    }
}

void fill_plain(Tensor& tensor, const CounterRng& rng, std::int64_t begin, std::int64_t end) {
    const std::size_t size = dtype_size(tensor.dtype());
    std::byte* data = tensor.mutable_data();
    for (std::int64_t i = begin; i < end; ++i) {
        f64_to_element(tensor.dtype(), rng.normal(static_cast<std::uint64_t>(i)), data + i * size);
    }
}

void fill_block(Tensor& tensor, const CounterRng& rng, std::int64_t begin, std::int64_t end) {
    switch (tensor.dtype()) {
    case DType::BF16:
        return fill_range<ToBf16>(tensor.mutable_data(), rng, begin, end);
    case DType::F16:
        return fill_range<ToF16>(tensor.mutable_data(), rng, begin, end);
    case DType::F32:
        return fill_range<ToF32>(tensor.mutable_data(), rng, begin, end);
    default:
        return fill_plain(tensor, rng, begin, end);
    }
}

} // namespace

double cos_two_pi(double u) {
    // Branch-free (the branches of a reduction by cases mispredict half the time and cost more than
    // std::cos): cos(2 pi u) = cos(2 pi t), t = min(u, 1 - u) in [0, 1/2]; = -cos(2 pi (1/2 - t)) past 1/4.
    // 1 - u and 1/2 - t are exact in double.
    const double t = std::min(u, 1.0 - u);
    const double r = std::min(t, 0.5 - t);
    const double c = cos_poly(2.0 * std::numbers::pi * r);
    return t > 0.25 ? -c : c;
}

void fill_normal_fast(Tensor& tensor, const CounterRng& rng, unsigned max_threads) {
    if (!tensor.is_contiguous() || tensor.mutable_data() == nullptr) {
        throw Error("problem input " + tensor.describe() + " is not a writable contiguous tensor");
    }
    constexpr std::int64_t kBlock = std::int64_t{1} << 20; // elements a thread takes at a time
    const std::int64_t count = tensor.numel();
    const std::int64_t blocks = (count + kBlock - 1) / kBlock;
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    const auto threads = static_cast<unsigned>(
        std::min<std::int64_t>(blocks, max_threads == 0 ? hardware : std::min(max_threads, hardware)));
    std::atomic<std::int64_t> next{0};
    auto work = [&] {
        for (std::int64_t b = next++; b < blocks; b = next++) {
            fill_block(tensor, rng, b * kBlock, std::min(count, (b + 1) * kBlock));
        }
    };
    if (threads <= 1) {
        work();
        return;
    }
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back(work);
    }
}

} // namespace pkbw::problems
