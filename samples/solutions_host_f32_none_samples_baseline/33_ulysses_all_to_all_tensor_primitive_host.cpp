// Hand-written sample candidate (not LLM output)
// PKB 33 (split x [M, N] into W row chunks, chunk j to rank j, concatenate along columns: rank j
// returns [M/W, W*N]) on the host backend: publish x in a symmetric buffer, barrier, then copy row
// j*M/W + i of peer r into row i, column block r.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    char* out = static_cast<char*>(ctx.output(0).data);
    const int world = ctx.world_size;
    const long long rows = x.shape[0] / world;
    const std::size_t row_bytes = static_cast<std::size_t>(x.shape[1]) * pkbw::element_size(x.dtype);
    const pkbw::SymmetricMemory shared = ctx.symmetric("ulysses_a2a_host", x.nbytes());
    std::memcpy(shared.local, x.data, x.nbytes());
    ctx.barrier();
    for (long long i = 0; i < rows; ++i) {
        for (int r = 0; r < world; ++r) {
            const char* src = static_cast<const char*>(shared.peers[r]) + (ctx.rank * rows + i) * row_bytes;
            std::memcpy(out + (i * world + r) * row_bytes, src, row_bytes);
        }
    }
    ctx.barrier();
    return 0;
}
