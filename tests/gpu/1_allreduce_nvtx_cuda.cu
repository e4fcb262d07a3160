// A peer-pointer all-reduce for problem 1 that opens its own NVTX range ("candidate/allreduce"), for
// the tracing check: the range must appear in the rank's trace beside the engine's phase ranges.
#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <nvtx3/nvToolsExt.h>

__global__ void sum_peers(void* const* peers, __nv_bfloat16* out, long long count, int world) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        float sum = 0.0f;
        for (int r = 0; r < world; ++r) {
            sum += __bfloat162float(static_cast<const __nv_bfloat16*>(peers[r])[i]);
        }
        out[i] = __float2bfloat16(sum);
    }
}

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::BF16) {
        return ctx.fail("this check candidate handles bf16 only");
    }
    nvtxRangePushA("candidate/allreduce");
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("nvtx_allreduce", in.nbytes());
    cudaMemcpyAsync(sym.local, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    sum_peers<<<264, 512, 0, ctx.stream()>>>(sym.peers_device, ctx.output(0).as<__nv_bfloat16>(), in.numel(),
                                             ctx.world_size);
    ctx.barrier();
    nvtxRangePop();
    return cudaGetLastError() == cudaSuccess ? 0 : ctx.fail("launch failed");
}
