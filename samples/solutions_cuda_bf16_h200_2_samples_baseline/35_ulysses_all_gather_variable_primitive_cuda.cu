// Hand-written sample candidate (not LLM output)
// PKB 35 (variable-size all-gather of [M, N] shards, concatenated on dim 0: every shard has the same shape),
// baseline: copy the shard into a symmetric buffer, host barrier, then one device-to-device copy per peer
// (peer memory is mapped into this process) into rows r*M.. of the output, and a last barrier before the
// buffer may be reused.
#include "pkbw/solution.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    char* out = static_cast<char*>(ctx.output(0).data);
    const std::size_t bytes = x.nbytes();
    const pkbw::SymmetricMemory shards = ctx.symmetric("ulysses_agv_baseline", bytes);
    cudaMemcpyAsync(shards.local, x.data, bytes, cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    for (int r = 0; r < ctx.world_size; ++r) {
        cudaMemcpyAsync(out + static_cast<std::size_t>(r) * bytes, shards.peers[r], bytes,
                        cudaMemcpyDeviceToDevice, ctx.stream());
    }
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
