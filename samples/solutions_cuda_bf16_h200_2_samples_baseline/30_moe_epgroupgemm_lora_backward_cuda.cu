// Hand-written sample candidate (not LLM output)
// PKB 30 (three SUM all-reduces in bf16: [8, N], [8, N], [N, 8]), baseline: the three inputs are
// copied into one symmetric buffer, a host barrier, then one kernel sums every element over the
// peers in rank order (fp32 accumulation, one rounding) into the outputs; a last barrier before
// the buffer is reused.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

struct Outputs {
    __nv_bfloat16* data[3];
    long long begin[4]; // element offsets of the three tensors in the packed buffer
};

__global__ void sum_peers(void* const* peers, int world, Outputs out) {
    const long long total = out.begin[3];
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        float s = 0.f;
        for (int r = 0; r < world; ++r)
            s += __bfloat162float(static_cast<const __nv_bfloat16*>(peers[r])[i]);
        const int k = i < out.begin[1] ? 0 : (i < out.begin[2] ? 1 : 2);
        out.data[k][i - out.begin[k]] = __float2bfloat16(s);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::BF16) {
        return ctx.fail("this sample handles bf16 gradients");
    }
    Outputs out;
    out.begin[0] = 0;
    for (int k = 0; k < 3; ++k) {
        out.data[k] = ctx.output(k).as<__nv_bfloat16>();
        out.begin[k + 1] = out.begin[k] + ctx.input(k).numel();
    }
    const std::size_t bytes = static_cast<std::size_t>(out.begin[3]) * sizeof(__nv_bfloat16);
    const pkbw::SymmetricMemory packed = ctx.symmetric("lora_ar_baseline", bytes);
    for (int k = 0; k < 3; ++k) {
        cudaMemcpyAsync(static_cast<__nv_bfloat16*>(packed.local) + out.begin[k], ctx.input(k).data,
                        ctx.input(k).nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    }
    ctx.barrier();
    sum_peers<<<static_cast<unsigned>(out.begin[3] / 256 + 1), 256, 0, ctx.stream()>>>(packed.peers_device,
                                                                                       ctx.world_size, out);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
