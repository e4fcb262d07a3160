// Hand-written sample candidate (not LLM output)
// PKB 6 (gather onto dst), baseline: every rank publishes its input in a symmetric buffer; the
// destination copies every peer's buffer into its slice, the others copy their own input (PKB's
// non-root ranks return their input).
#include "pkbw/solution.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    char* out = static_cast<char*>(ctx.output(0).data);
    const int dst = static_cast<int>(ctx.param("dst", 0));
    const std::size_t bytes = in.nbytes();
    const pkbw::SymmetricMemory sym = ctx.symmetric("gather_baseline", bytes);
    cudaMemcpyAsync(sym.local, in.data, bytes, cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    if (ctx.rank == dst) {
        for (int r = 0; r < ctx.world_size; ++r) {
            cudaMemcpyAsync(out + r * bytes, sym.peers[r], bytes, cudaMemcpyDeviceToDevice, ctx.stream());
        }
    } else {
        cudaMemcpyAsync(out, in.data, bytes, cudaMemcpyDeviceToDevice, ctx.stream());
    }
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
