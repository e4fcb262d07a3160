// Hand-written sample candidate (not LLM output)
// PKB 8 (all-to-all), baseline: every rank publishes its [W, M, N] input in a symmetric buffer;
// rank j then copies chunk j of every peer r into its chunk r.
#include "pkbw/solution.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    char* out = static_cast<char*>(ctx.output(0).data);
    const std::size_t chunk = in.nbytes() / ctx.world_size;
    const pkbw::SymmetricMemory sym = ctx.symmetric("alltoall_baseline", in.nbytes());
    cudaMemcpyAsync(sym.local, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    for (int r = 0; r < ctx.world_size; ++r) {
        cudaMemcpyAsync(out + r * chunk, static_cast<const char*>(sym.peers[r]) + ctx.rank * chunk, chunk,
                        cudaMemcpyDeviceToDevice, ctx.stream());
    }
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
