// Hand-written sample candidate (not LLM output)
// PKB 20 (blocked dequantise, all-to-all), baseline: dequantise into a symmetric fp32 buffer; after
// a host barrier rank j copies chunk j of every peer's buffer into its chunk r.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

__global__ void dequantize(const __nv_bfloat16* y, const __nv_bfloat16* s, float* x, long long count,
                           int block) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x)
        x[i] = __bfloat162float(y[i]) * __bfloat162float(s[i / block]);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& y = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    if (y.dtype != pkbw::DType::BF16) {
        return ctx.fail("fp8-dequantize baseline: bf16 only");
    }
    const pkbw::SymmetricMemory sym = ctx.symmetric("fp8dq_baseline", out.nbytes());
    dequantize<<<2048, 256, 0, ctx.stream()>>>(
        y.as<const __nv_bfloat16>(), ctx.input(1).as<const __nv_bfloat16>(), static_cast<float*>(sym.local),
        y.numel(), static_cast<int>(ctx.param("block_size", 128)));
    ctx.barrier();
    const std::size_t chunk = out.nbytes() / ctx.world_size;
    for (int r = 0; r < ctx.world_size; ++r) {
        cudaMemcpyAsync(static_cast<char*>(out.data) + r * chunk,
                        static_cast<const char*>(sym.peers[r]) + ctx.rank * chunk, chunk,
                        cudaMemcpyDeviceToDevice, ctx.stream());
    }
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
