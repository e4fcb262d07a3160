// Hand-written sample candidate (not LLM output)
// PKB 37 (x [B, T, 8, 64], sequence zero-padded to a multiple of W; rank j returns
// [B, ceil(T/W), 8*W, 64], head block r = rank r's positions j*ceil(T/W) ..) on the host backend:
// publish x in a symmetric buffer, barrier, copy tokens from the owning peer (zeros past T), barrier.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    char* out = static_cast<char*>(ctx.output(0).data);
    const int world = ctx.world_size;
    const long long batch = x.shape[0], seq = x.shape[1];
    const long long chunk = (seq + world - 1) / world;
    const std::size_t token = static_cast<std::size_t>(x.shape[2] * x.shape[3]) * pkbw::element_size(x.dtype);
    const pkbw::SymmetricMemory shared = ctx.symmetric("ulysses37_host", x.nbytes());
    std::memcpy(shared.local, x.data, x.nbytes());
    ctx.barrier();
    for (long long b = 0; b < batch; ++b) {
        for (long long t = 0; t < chunk; ++t) {
            const long long pos = ctx.rank * chunk + t;
            for (int r = 0; r < world; ++r, out += token) {
                if (pos < seq) {
                    std::memcpy(out, static_cast<const char*>(shared.peers[r]) + (b * seq + pos) * token,
                                token);
                } else {
                    std::memset(out, 0, token);
                }
            }
        }
    }
    ctx.barrier();
    return 0;
}
