// Hand-written sample candidate (not LLM output)
// PKB 71 (x [1, C, 2L] bf16 = zigzag chunks a | b, weight [C, 1, 7]; chunk a is convolved after the
// last 6 samples of rank r-1's chunk a (zeros on rank 0), chunk b after the last 6 samples of rank
// r+1's chunk b (the last rank uses its own chunk a's); depthwise, no padding, fp32 accumulation),
// baseline: x is copied into a symmetric buffer, a host barrier, one kernel reads the halo samples
// straight from the neighbour's buffer, and a host barrier before the buffer is reused.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;

__global__ void conv(const bf16* x, const bf16* prev, const bf16* next, int next_chunk, const bf16* w,
                     bf16* y, long long c_n, long long len, int taps) {
    const long long total = c_n * 2 * len;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long c = i / (2 * len), which = (i / len) % 2, t = i % len;
        const bf16* row = x + c * 2 * len + which * len;
        const bf16* src = which == 0 ? prev : next;
        const long long src_chunk = which == 0 ? 0 : next_chunk;
        float acc = 0.f;
        for (int k = 0; k < taps; ++k) {
            const long long s = t + k - (taps - 1);
            float v = 0.f;
            if (s >= 0)
                v = __bfloat162float(row[s]);
            else if (src)
                v = __bfloat162float(src[c * 2 * len + src_chunk * len + len + s]);
            acc += __bfloat162float(w[c * taps + k]) * v;
        }
        y[i] = __float2bfloat16(acc);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    if (x.dtype != pkbw::DType::BF16)
        return ctx.fail("this sample handles bf16");
    const long long c_n = x.shape[1], len = x.shape[2] / 2;
    const int taps = static_cast<int>(ctx.input(1).shape[2]), last = ctx.world_size - 1;
    const pkbw::SymmetricMemory xs = ctx.symmetric("conv71_x", x.nbytes());
    cudaMemcpyAsync(xs.local, x.data, x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    const bf16* prev = ctx.rank > 0 ? static_cast<const bf16*>(xs.peers[ctx.rank - 1]) : nullptr;
    const bf16* next = static_cast<const bf16*>(xs.peers[ctx.rank == last ? ctx.rank : ctx.rank + 1]);
    conv<<<1024, 256, 0, ctx.stream()>>>(x.as<bf16>(), prev, next, ctx.rank == last ? 0 : 1,
                                         ctx.input(1).as<bf16>(), ctx.output(0).as<bf16>(), c_n, len, taps);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
