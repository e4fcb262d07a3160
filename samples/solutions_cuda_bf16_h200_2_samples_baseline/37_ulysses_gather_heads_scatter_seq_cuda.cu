// Hand-written sample candidate (not LLM output)
// PKB 37 (x [B, T, 8, 64], sequence zero-padded to a multiple of W; rank j returns
// [B, ceil(T/W), 8*W, 64], head block r = rank r's positions j*ceil(T/W) ..), baseline: copy x into
// a symmetric buffer, host barrier, one kernel reading each output element from the owning peer
// (zero past T), host barrier before the buffer is reused.
#include "pkbw/solution.h"

#include <cstdint>

namespace {

// Units are 16-bit words; one token is `token` words.
__global__ void gather_tokens(void* const* peers, std::uint16_t* out, long long batch, long long seq,
                              long long chunk, long long token, int world, int rank) {
    const long long total = batch * chunk * world * token;
    for (long long o = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; o < total;
         o += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long e = o % token;
        const int r = static_cast<int>((o / token) % world);
        const long long t = (o / (token * world)) % chunk;
        const long long b = o / (token * world * chunk);
        const long long pos = rank * chunk + t;
        out[o] = pos < seq ? static_cast<const std::uint16_t*>(peers[r])[(b * seq + pos) * token + e]
                           : std::uint16_t(0);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const int world = ctx.world_size;
    const long long batch = x.shape[0], seq = x.shape[1];
    const long long chunk = (seq + world - 1) / world;
    const long long token = x.shape[2] * x.shape[3] * static_cast<long long>(pkbw::element_size(x.dtype) / 2);
    const pkbw::SymmetricMemory shared = ctx.symmetric("ulysses37_baseline", x.nbytes());
    cudaMemcpyAsync(shared.local, x.data, x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    const long long total = batch * chunk * world * token;
    const unsigned blocks = static_cast<unsigned>(total / 256 + 1 > 2048 ? 2048 : total / 256 + 1);
    gather_tokens<<<blocks, 256, 0, ctx.stream()>>>(shared.peers_device,
                                                    static_cast<std::uint16_t*>(ctx.output(0).data), batch,
                                                    seq, chunk, token, world, ctx.rank);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
