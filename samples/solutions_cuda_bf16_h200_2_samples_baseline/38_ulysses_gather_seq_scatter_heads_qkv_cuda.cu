// Hand-written sample candidate (not LLM output)
// PKB 38 (qkv [B, T, 3*512] viewed [B, T, 3, 512]; rank j returns [B, W*T, 3*512/W], sequence block
// r = columns j*512/W .. of each third of rank r's tensor), baseline: copy the tensor into a
// symmetric buffer, host barrier, one kernel reading each output element from the owning peer,
// host barrier before the buffer is reused.
#include "pkbw/solution.h"

#include <cstdint>

namespace {

// Units are 16-bit words; `third` words per q/k/v third, `piece` = third / W of them per rank.
__global__ void gather_qkv(void* const* peers, std::uint16_t* out, long long batch, long long seq,
                           long long third, long long piece, int world, int rank) {
    const long long total = batch * world * seq * 3 * piece;
    for (long long o = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; o < total;
         o += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long c = o % piece;
        const long long q = (o / piece) % 3;
        const long long t = (o / (piece * 3)) % seq;
        const int r = static_cast<int>((o / (piece * 3 * seq)) % world);
        const long long b = o / (piece * 3 * seq * world);
        const auto* src = static_cast<const std::uint16_t*>(peers[r]);
        out[o] = src[(b * seq + t) * 3 * third + q * third + rank * piece + c];
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const int world = ctx.world_size;
    const long long third = x.shape[2] / 3 * static_cast<long long>(pkbw::element_size(x.dtype) / 2);
    const long long piece = third / world;
    const pkbw::SymmetricMemory shared = ctx.symmetric("ulysses38_baseline", x.nbytes());
    cudaMemcpyAsync(shared.local, x.data, x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    const long long total = x.shape[0] * world * x.shape[1] * 3 * piece;
    const unsigned blocks = static_cast<unsigned>(total / 256 + 1 > 2048 ? 2048 : total / 256 + 1);
    gather_qkv<<<blocks, 256, 0, ctx.stream()>>>(shared.peers_device,
                                                 static_cast<std::uint16_t*>(ctx.output(0).data), x.shape[0],
                                                 x.shape[1], third, piece, world, ctx.rank);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
