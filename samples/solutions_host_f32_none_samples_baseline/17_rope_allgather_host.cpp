// Hand-written sample candidate (not LLM output)
// PKB 17 (RoPE on the local q and k, then all-gather along the sequence) on the host backend: every
// rank rotates its [B, S, H, D] chunks, x*cos + rotate_half(x)*sin with rotate_half(x) =
// cat(-x[D/2:], x[:D/2]), into a symmetric buffer (q then k); each rank then copies chunk w of
// every batch entry into sequence positions [w*S, (w+1)*S) of its [B, W*S, H, D] outputs.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& q = ctx.input(0);
    const pkbw::TensorView& k = ctx.input(1);
    const pkbw::TensorView& cos_t = ctx.input(2);
    const pkbw::TensorView& sin_t = ctx.input(3);
    for (int i = 0; i < 4; ++i) {
        if (ctx.input(i).dtype != pkbw::DType::F32) {
            return ctx.fail("host rope-allgather sample: only f32 is supported");
        }
    }
    const std::int64_t batch = q.shape[0], seq = q.shape[1], heads = q.shape[2], dim = q.shape[3];
    const std::int64_t half = dim / 2;
    const std::int64_t local = q.numel();
    const pkbw::SymmetricMemory sym = ctx.symmetric("rope_allgather_host", 2 * q.nbytes());
    const float* cs = cos_t.as<const float>();
    const float* sn = sin_t.as<const float>();
    for (int t = 0; t < 2; ++t) {
        const float* x = (t == 0 ? q : k).as<const float>();
        float* y = static_cast<float*>(sym.local) + t * local;
        for (std::int64_t pos = 0; pos < batch * seq; ++pos) {
            for (std::int64_t h = 0; h < heads; ++h) {
                const float* xr = x + (pos * heads + h) * dim;
                float* yr = y + (pos * heads + h) * dim;
                for (std::int64_t d = 0; d < dim; ++d) {
                    const float rotated = d < half ? -xr[d + half] : xr[d - half];
                    yr[d] = xr[d] * cs[pos * dim + d] + rotated * sn[pos * dim + d];
                }
            }
        }
    }
    ctx.barrier();
    const std::int64_t chunk = seq * heads * dim; // one batch entry of one rank
    for (int t = 0; t < 2; ++t) {
        float* out = ctx.output(t).as<float>();
        for (int w = 0; w < ctx.world_size; ++w) {
            const float* peer = static_cast<const float*>(sym.peers[w]) + t * local;
            for (std::int64_t b = 0; b < batch; ++b) {
                std::memcpy(out + (b * ctx.world_size + w) * chunk, peer + b * chunk,
                            static_cast<std::size_t>(chunk) * sizeof(float));
            }
        }
    }
    ctx.barrier();
    return 0;
}
