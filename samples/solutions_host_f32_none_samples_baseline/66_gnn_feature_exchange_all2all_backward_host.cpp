// Hand-written sample candidate (not LLM output)
// PKB 66 (the backward of 65: grad_output's R-row chunks come back through the rotated list all-to-all,
// then output[seed] = the sum of the received rows with that seed id) on the host backend: grad_output
// into a symmetric buffer, barrier, each received row read straight from its source rank and added to
// its seed's row, barrier. Equal counts (R rows per peer), as PKB's inputs have.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& grad = ctx.input(0);
    const int world = ctx.world_size, me = ctx.rank;
    const long long rows = grad.shape[0], hidden = grad.shape[1], per_peer = rows / world;
    const pkbw::SymmetricMemory sym = ctx.symmetric("gnn66_host", grad.nbytes());
    std::memcpy(sym.local, grad.data, grad.nbytes());
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    std::memset(out, 0, ctx.output(0).nbytes());
    const long long* ids = ctx.input(1).as<const long long>();
    for (long long t = 0; t < rows; ++t) {
        // Output chunk c comes from rank (me + c) mod W, which sent its chunk (me - that rank) mod W.
        const int source = static_cast<int>((me + t / per_peer) % world);
        const long long chunk = ((me - source) % world + world) % world;
        const float* row =
            static_cast<const float*>(sym.peers[source]) + (chunk * per_peer + t % per_peer) * hidden;
        for (long long h = 0; h < hidden; ++h) {
            out[ids[t] * hidden + h] += row[h];
        }
    }
    ctx.barrier();
    return 0;
}
