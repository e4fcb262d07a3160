// Hand-written sample candidate (not LLM output)
// PKB 65 (gathered = local_features[seed_inverse_ids]; rotated list all-to-all of R-row chunks: rank
// p's output chunk c is chunk (W - c) mod W of rank (p + c) mod W's gathered rows) on the host
// backend: gather into a symmetric buffer, barrier, copy each output chunk from its peer, barrier.
// Equal counts (R rows per peer), as PKB's inputs have.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& features = ctx.input(0);
    const pkbw::TensorView& ids = ctx.input(1);
    const int world = ctx.world_size;
    const long long rows = ids.numel(), per_peer = rows / world;
    if (static_cast<long long>(ctx.param("counts_sent[0]", static_cast<double>(per_peer))) != per_peer) {
        return ctx.fail("this sample handles equal counts");
    }
    const std::size_t row_bytes = features.nbytes() / static_cast<std::size_t>(features.shape[0]);
    const pkbw::SymmetricMemory gathered =
        ctx.symmetric("gnn65_host", static_cast<std::size_t>(rows) * row_bytes);
    char* mine = static_cast<char*>(gathered.local);
    for (long long t = 0; t < rows; ++t) {
        std::memcpy(mine + t * row_bytes,
                    static_cast<const char*>(features.data) + ids.as<const long long>()[t] * row_bytes,
                    row_bytes);
    }
    ctx.barrier();
    char* out = static_cast<char*>(ctx.output(0).data);
    const std::size_t chunk = static_cast<std::size_t>(per_peer) * row_bytes;
    for (int c = 0; c < world; ++c) {
        const char* peer = static_cast<const char*>(gathered.peers[(ctx.rank + c) % world]);
        std::memcpy(out + c * chunk, peer + ((world - c) % world) * chunk, chunk);
    }
    ctx.barrier();
    return 0;
}
