// Hand-written sample candidate (not LLM output)
// PKB 65 (gathered = local_features[seed_inverse_ids]; rotated list all-to-all of R-row chunks: rank
// p's output chunk c is chunk (W - c) mod W of rank (p + c) mod W's gathered rows), baseline: a gather
// kernel writes into a symmetric buffer, a host barrier, one device-to-device copy per output chunk
// from its peer, a last host barrier. Equal counts (R rows per peer), as PKB's inputs have.
#include "pkbw/solution.h"

#include <cstdint>

namespace {

__global__ void gather(const std::uint16_t* table, const long long* ids, long long rows, long long words,
                       std::uint16_t* dst) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < rows * words;
         i += static_cast<long long>(gridDim.x) * blockDim.x)
        dst[i] = table[ids[i / words] * words + i % words];
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& features = ctx.input(0);
    const pkbw::TensorView& ids = ctx.input(1);
    const int world = ctx.world_size;
    const long long rows = ids.numel(), per_peer = rows / world;
    if (static_cast<long long>(ctx.param("counts_sent[0]", static_cast<double>(per_peer))) != per_peer) {
        return ctx.fail("this sample handles equal counts");
    }
    const std::size_t row_bytes = features.nbytes() / static_cast<std::size_t>(features.shape[0]);
    const long long words = static_cast<long long>(row_bytes / 2);
    const pkbw::SymmetricMemory gathered =
        ctx.symmetric("gnn65_baseline", static_cast<std::size_t>(rows) * row_bytes);
    const unsigned blocks =
        static_cast<unsigned>(rows * words / 256 + 1 > 2048 ? 2048 : rows * words / 256 + 1);
    gather<<<blocks, 256, 0, ctx.stream()>>>(features.as<const std::uint16_t>(), ids.as<const long long>(),
                                             rows, words, static_cast<std::uint16_t*>(gathered.local));
    ctx.barrier();
    char* out = static_cast<char*>(ctx.output(0).data);
    const std::size_t chunk = static_cast<std::size_t>(per_peer) * row_bytes;
    for (int c = 0; c < world; ++c) {
        const char* peer = static_cast<const char*>(gathered.peers[(ctx.rank + c) % world]);
        cudaMemcpyAsync(out + c * chunk, peer + ((world - c) % world) * chunk, chunk,
                        cudaMemcpyDeviceToDevice, ctx.stream());
    }
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
