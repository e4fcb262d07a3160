#include "pkbw/toolkit/permute_host.h"

#include <gtest/gtest.h>
#include <numeric>
#include <vector>

using pkbw::tk::StridedCopy;

namespace {

// Reference: the destination index of every source element by explicit loops over a 3-d shape.
std::vector<int> permute3(const std::vector<int>& src, const long long* shape, const int* perm) {
    std::vector<int> dst(src.size());
    const long long out_shape[3] = {shape[perm[0]], shape[perm[1]], shape[perm[2]]};
    for (long long i = 0; i < shape[0]; ++i)
        for (long long j = 0; j < shape[1]; ++j)
            for (long long k = 0; k < shape[2]; ++k) {
                const long long idx[3] = {i, j, k};
                const long long o =
                    (idx[perm[0]] * out_shape[1] + idx[perm[1]]) * out_shape[2] + idx[perm[2]];
                dst[o] = src[(i * shape[1] + j) * shape[2] + k];
            }
    return dst;
}

} // namespace

TEST(Permute, EveryPermutationOfThreeDims) {
    const long long shape[3] = {3, 4, 5};
    std::vector<int> src(60);
    std::iota(src.begin(), src.end(), 0);
    int perm[3] = {0, 1, 2};
    do {
        EXPECT_EQ(pkbw::tk::permuted(src, 3, shape, perm), permute3(src, shape, perm))
            << perm[0] << perm[1] << perm[2];
    } while (std::next_permutation(perm, perm + 3));
}

TEST(Permute, RejectsNonPermutations) {
    const long long shape[2] = {2, 2};
    const int twice[2] = {0, 0}, out_of_range[2] = {0, 2};
    StridedCopy copy;
    EXPECT_FALSE(StridedCopy::permutation(4, 2, shape, twice, copy));
    EXPECT_FALSE(StridedCopy::permutation(4, 2, shape, out_of_range, copy));
    EXPECT_FALSE(StridedCopy::permutation(4, 0, shape, twice, copy));
}

// simplified() moves the same elements: merged dims, dropped size-1 dims and widened words give the
// same bytes as the plain copy (the device kernel runs the simplified copy).
TEST(Permute, SimplifiedCopyMovesTheSameBytes) {
    // [W=4, M=3, K=8] -> [M, W, K] of 2-byte elements: rows of 16 bytes widen to one 16-byte word.
    const long long shape[4] = {4, 1, 3, 8};
    const int perm[4] = {2, 1, 0, 3};
    StridedCopy copy;
    ASSERT_TRUE(StridedCopy::permutation(2, 4, shape, perm, copy));
    alignas(16) std::uint16_t src[96];
    std::iota(src, src + 96, std::uint16_t{0});
    alignas(16) std::uint16_t plain[96] = {}, fast[96] = {};
    pkbw::tk::strided_copy_host(src, plain, copy);
    const StridedCopy simple = copy.simplified(src, fast);
    EXPECT_EQ(simple.elem_bytes, 16u);
    EXPECT_EQ(simple.ndim, 3); // [M, W, one 16-byte word]
    pkbw::tk::strided_copy_host(src, fast, simple);
    EXPECT_EQ(std::vector<std::uint16_t>(plain, plain + 96), std::vector<std::uint16_t>(fast, fast + 96));
    // Identity collapses to one contiguous run.
    const int identity[4] = {0, 1, 2, 3};
    ASSERT_TRUE(StridedCopy::permutation(2, 4, shape, identity, copy));
    EXPECT_EQ(copy.simplified(src, fast).ndim, 1);
    // A misaligned destination keeps the element size.
    EXPECT_EQ(copy.simplified(src, fast + 1).elem_bytes, 2u);
}
