// Hand-written sample candidate (not LLM output)
// PKB 3 (broadcast from src), baseline: the source publishes its input in a symmetric buffer; after
// a host barrier every rank copies it from the source's mapping.
#include "pkbw/solution.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const int src = static_cast<int>(ctx.param("src", 0));
    const std::size_t bytes = in.nbytes();
    const pkbw::SymmetricMemory sym = ctx.symmetric("broadcast_baseline", bytes);
    if (ctx.rank == src) {
        cudaMemcpyAsync(sym.local, in.data, bytes, cudaMemcpyDeviceToDevice, ctx.stream());
    }
    ctx.barrier();
    cudaMemcpyAsync(ctx.output(0).data, sym.peers[src], bytes, cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
