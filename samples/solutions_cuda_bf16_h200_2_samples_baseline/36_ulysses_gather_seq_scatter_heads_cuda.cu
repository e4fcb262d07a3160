// Hand-written sample candidate (not LLM output)
// PKB 36 (x [B, T, 8, 64]; rank j returns [B, W*T, 8/W, 64], sequence block r = rank r's heads
// j*8/W ..), baseline: copy x into a symmetric buffer, host barrier, one kernel that reads every
// output element from the owning peer's buffer, host barrier before the buffer is reused.
#include "pkbw/solution.h"

#include <cstdint>

namespace {

// Units are 16-bit words; `piece` words of one token go to each rank.
__global__ void gather_heads(void* const* peers, std::uint16_t* out, long long batch, long long seq,
                             long long piece, int world, int rank) {
    const long long total = batch * world * seq * piece;
    for (long long o = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; o < total;
         o += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long e = o % piece;
        const long long t = (o / piece) % seq;
        const int r = static_cast<int>((o / (piece * seq)) % world);
        const long long b = o / (piece * seq * world);
        const auto* src = static_cast<const std::uint16_t*>(peers[r]);
        out[o] = src[((b * seq + t) * world + rank) * piece + e];
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const int world = ctx.world_size;
    const long long words = static_cast<long long>(pkbw::element_size(x.dtype) / 2);
    const long long piece = x.shape[2] * x.shape[3] * words / world;
    const pkbw::SymmetricMemory shared = ctx.symmetric("ulysses36_baseline", x.nbytes());
    cudaMemcpyAsync(shared.local, x.data, x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    const long long total = x.shape[0] * x.shape[1] * piece * world;
    const unsigned blocks = static_cast<unsigned>(total / 256 + 1 > 2048 ? 2048 : total / 256 + 1);
    gather_heads<<<blocks, 256, 0, ctx.stream()>>>(shared.peers_device,
                                                   static_cast<std::uint16_t*>(ctx.output(0).data),
                                                   x.shape[0], x.shape[1], piece, world, ctx.rank);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
