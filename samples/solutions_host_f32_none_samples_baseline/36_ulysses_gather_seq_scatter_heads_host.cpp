// Hand-written sample candidate (not LLM output)
// PKB 36 (x [B, T, 8, 64]; rank j returns [B, W*T, 8/W, 64], sequence block r = rank r's heads
// j*8/W ..) on the host backend: publish x in a symmetric buffer, barrier, copy each token's head
// chunk from the owning peer, barrier.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    char* out = static_cast<char*>(ctx.output(0).data);
    const int world = ctx.world_size;
    const long long batch = x.shape[0], seq = x.shape[1];
    const std::size_t token = static_cast<std::size_t>(x.shape[2] * x.shape[3]) * pkbw::element_size(x.dtype);
    const std::size_t piece = token / static_cast<std::size_t>(world);
    const pkbw::SymmetricMemory shared = ctx.symmetric("ulysses36_host", x.nbytes());
    std::memcpy(shared.local, x.data, x.nbytes());
    ctx.barrier();
    for (long long b = 0; b < batch; ++b) {
        for (int r = 0; r < world; ++r) {
            const char* peer = static_cast<const char*>(shared.peers[r]);
            for (long long t = 0; t < seq; ++t, out += piece) {
                std::memcpy(out, peer + (b * seq + t) * token + ctx.rank * piece, piece);
            }
        }
    }
    ctx.barrier();
    return 0;
}
