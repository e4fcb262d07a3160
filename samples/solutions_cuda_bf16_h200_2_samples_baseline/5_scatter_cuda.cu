// Hand-written sample candidate (not LLM output)
// PKB 5 (scatter from src), baseline: the source publishes its [W, M, N] input in a symmetric
// buffer; after a host barrier rank i copies chunk i from the source's mapping.
#include "pkbw/solution.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int src = static_cast<int>(ctx.param("src", 0));
    const std::size_t chunk = ctx.output(0).nbytes();
    // Same name and size on every rank (a collective allocation), though only the source fills it.
    const pkbw::SymmetricMemory sym = ctx.symmetric("scatter_baseline", chunk * ctx.world_size);
    if (ctx.rank == src) {
        cudaMemcpyAsync(sym.local, ctx.input(0).data, chunk * ctx.world_size, cudaMemcpyDeviceToDevice,
                        ctx.stream());
    }
    ctx.barrier();
    cudaMemcpyAsync(ctx.output(0).data, static_cast<const char*>(sym.peers[src]) + ctx.rank * chunk, chunk,
                    cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
