// The shape of a non-causal grouped-query attention over strided [rows, heads, head_dim] operands (77),
// shared by the CUDA kernel (gqa_attention.cuh) and its float64 twin (gqa_attention_host.h).
//
//   out[i, h, :] = softmax_j(q[i, h, :] · k[j, g(h), :] · scale) · v[j, g(h), :]
//   g(h) = h / (q_heads / kv_heads)   (PKB's repeat_interleave of the key/value heads)
//
// Strides are in elements; k and v may share one buffer (77's key_value, v at an offset).
#pragma once

#ifdef __CUDACC__
#define PKBW_GQA_FN __host__ __device__ inline
#else
#define PKBW_GQA_FN inline
#endif

namespace pkbw::tk {

struct GqaOperand {
    long long row_stride = 0;  // elements between rows (tokens)
    long long head_stride = 0; // elements between heads
};

struct GqaShape {
    long long queries = 0, keys = 0;
    long long q_heads = 0, kv_heads = 0;
    long long head_dim = 0;
    double scale = 0; // PKB's SDPA default: 1 / sqrt(head_dim)
    GqaOperand q, k, v, out;
};

// The key/value head that query head h reads.
PKBW_GQA_FN long long gqa_kv_head(const GqaShape& s, long long h) {
    return h / (s.q_heads / s.kv_heads);
}

// Whether the heads group evenly (PKB's repeat_interleave needs it).
PKBW_GQA_FN bool gqa_heads_group(const GqaShape& s) {
    return s.kv_heads > 0 && s.q_heads >= s.kv_heads && s.q_heads % s.kv_heads == 0;
}

} // namespace pkbw::tk
