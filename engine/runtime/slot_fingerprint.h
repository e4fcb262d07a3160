// A fingerprint of a candidate's output slots, taken when its block answers and again once it is
// frozen: slots that changed in between were written after the reply, in time the judge's clock did not
// count (docs/perf.md). A wrapping sum over the 8-byte words, each mixed with its index (splitmix64's
// finaliser): the order of the terms does not matter, so a GPU adds them with atomics, and moving or
// changing any word changes the sum but for a chance of 2^-64.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define PKBW_FINGERPRINT_FN __host__ __device__ __forceinline__
#else
#define PKBW_FINGERPRINT_FN inline
#endif

namespace pkbw::engine {

PKBW_FINGERPRINT_FN std::uint64_t fingerprint_term(std::uint64_t word, std::uint64_t index) {
    std::uint64_t z = word ^ (index * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

} // namespace pkbw::engine
