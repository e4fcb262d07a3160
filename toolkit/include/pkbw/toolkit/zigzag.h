// PKB's zigzag split of a sequence into 2W chunks (71, 72): rank r holds chunks r and 2W-1-r, in that
// order, so that causal work is balanced. One index map for the device and the host.
//
//   zigzag_chunk(p, n):    the global chunk at position p of the rank-ordered concatenation
//                          (PKB's _zigzag_indices: 0, n-1, 1, n-2, ...)
//   zigzag_position(g, n): where global chunk g sits in that concatenation (the inverse, PKB's
//                          _inverse_zigzag_indices = argsort of the above)
#pragma once

#ifdef __CUDACC__
#define PKBW_ZIGZAG_FN __host__ __device__ inline
#else
#define PKBW_ZIGZAG_FN inline
#endif

namespace pkbw::tk {

PKBW_ZIGZAG_FN long long zigzag_chunk(long long position, long long chunks) {
    return position % 2 == 0 ? position / 2 : chunks - 1 - position / 2;
}

PKBW_ZIGZAG_FN long long zigzag_position(long long chunk, long long chunks) {
    return chunk < (chunks + 1) / 2 ? 2 * chunk : 2 * (chunks - 1 - chunk) + 1;
}

} // namespace pkbw::tk
