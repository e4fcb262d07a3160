// Hand-written sample candidate (not LLM output)
// PKB 38 (qkv [B, T, 3*512] viewed [B, T, 3, 512]; rank j returns [B, W*T, 3*512/W], sequence block
// r = columns j*512/W .. of each third of rank r's tensor) on the host backend: publish the tensor
// in a symmetric buffer, barrier, copy the three column chunks of each token, barrier.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    char* out = static_cast<char*>(ctx.output(0).data);
    const int world = ctx.world_size;
    const long long batch = x.shape[0], seq = x.shape[1];
    const std::size_t size = pkbw::element_size(x.dtype);
    const std::size_t third = static_cast<std::size_t>(x.shape[2] / 3) * size;
    const std::size_t piece = third / static_cast<std::size_t>(world);
    const pkbw::SymmetricMemory shared = ctx.symmetric("ulysses38_host", x.nbytes());
    std::memcpy(shared.local, x.data, x.nbytes());
    ctx.barrier();
    for (long long b = 0; b < batch; ++b) {
        for (int r = 0; r < world; ++r) {
            const char* peer = static_cast<const char*>(shared.peers[r]);
            for (long long t = 0; t < seq; ++t) {
                const char* token = peer + (b * seq + t) * 3 * third + ctx.rank * piece;
                for (int q = 0; q < 3; ++q, out += piece) {
                    std::memcpy(out, token + q * third, piece);
                }
            }
        }
    }
    ctx.barrier();
    return 0;
}
