// Hand-written sample candidate (not LLM output)
// PKB 66 (the backward of 65: grad_output's R-row chunks come back through the rotated list all-to-all,
// then output[seed] = the sum of the received rows with that seed id), baseline: grad_output copied into a
// symmetric buffer, a host barrier, one kernel that reads each received row straight from its source
// rank's buffer (peer pointers) and adds it to its seed's row with atomics, a last host barrier. Equal
// counts (R rows per peer), as PKB's inputs have.
#include "pkbw/solution.h"

namespace {

__global__ void gather_add(const void* const* peers, const long long* ids, long long rows, long long hidden,
                           long long per_peer, int world, int me, float* out) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < rows * hidden;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long t = i / hidden, h = i % hidden;
        const int source = static_cast<int>((me + t / per_peer) % world);
        const long long chunk = ((me - source) % world + world) % world;
        const float* row =
            static_cast<const float*>(peers[source]) + (chunk * per_peer + t % per_peer) * hidden;
        atomicAdd(out + ids[t] * hidden + h, row[h]);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& grad = ctx.input(0);
    const int world = ctx.world_size;
    const long long rows = grad.shape[0], hidden = grad.shape[1];
    const pkbw::SymmetricMemory sym = ctx.symmetric("gnn66_baseline", grad.nbytes());
    cudaMemcpyAsync(sym.local, grad.data, grad.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    cudaMemsetAsync(ctx.output(0).data, 0, ctx.output(0).nbytes(), ctx.stream());
    ctx.barrier(); // waits for this rank's stream first
    const long long total = rows * hidden;
    const unsigned blocks = static_cast<unsigned>(total / 256 + 1 > 4096 ? 4096 : total / 256 + 1);
    gather_add<<<blocks, 256, 0, ctx.stream()>>>(sym.peers_device, ctx.input(1).as<const long long>(), rows,
                                                 hidden, rows / world, world, ctx.rank,
                                                 ctx.output(0).as<float>());
    ctx.barrier();
    return 0;
}
