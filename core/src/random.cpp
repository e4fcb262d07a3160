#include "pkbw/core/random.h"

#include <cmath>
#include <numbers>

namespace pkbw {
namespace {

// SplitMix64's finaliser: a bijective mix with full avalanche, enough for test inputs.
std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

} // namespace

std::uint64_t pkb_seed(std::uint64_t base, int problem_id, int rank, int trial) {
    return base + static_cast<std::uint64_t>(problem_id) * 1000u + static_cast<std::uint64_t>(rank) +
           static_cast<std::uint64_t>(trial) * 1000003u;
}

namespace {
std::uint64_t stream_key(std::uint64_t seed, std::uint64_t stream) {
    return mix(seed ^ mix(stream + 0x9E3779B97F4A7C15ull));
}
} // namespace

CounterRng::CounterRng(std::uint64_t seed, std::uint64_t stream)
    : key_(stream_key(seed, stream))
    , normal_key_(stream_key(seed, stream ^ 0x5DEECE66Dull)) {}

std::uint64_t CounterRng::bits(std::uint64_t index) const {
    return mix(key_ + index * 0x9E3779B97F4A7C15ull);
}

double CounterRng::uniform(std::uint64_t index) const {
    return static_cast<double>(bits(index) >> 11) * 0x1.0p-53;
}

double CounterRng::uniform(std::uint64_t index, double lo, double hi) const {
    return lo + (hi - lo) * uniform(index);
}

CounterRng::NormalUniforms CounterRng::normal_uniforms(std::uint64_t index) const {
    // Two independent draws per index (2i, 2i+1 in a sub-stream) keep the index space one-to-one.
    auto sub_uniform = [&](std::uint64_t i) {
        return static_cast<double>(mix(normal_key_ + i * 0x9E3779B97F4A7C15ull) >> 11) * 0x1.0p-53;
    };
    return {1.0 - sub_uniform(2 * index), sub_uniform(2 * index + 1)}; // u1 in (0, 1]
}

double CounterRng::normal(std::uint64_t index) const {
    const auto [u1, u2] = normal_uniforms(index);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::int64_t CounterRng::integer(std::uint64_t index, std::int64_t lo, std::int64_t hi) const {
    const auto span = static_cast<std::uint64_t>(hi - lo);
    return lo + static_cast<std::int64_t>(span == 0 ? 0 : bits(index) % span);
}

} // namespace pkbw
