// Hand-written sample candidate (not LLM output)
// PKB 87 (x [1, C, h, L] bf16 = a height shard, weight [C, C, k, k], bias [C]; params stride, padding):
// the shard is convolved with padding (0, p) after framing it with rank r-1's last p rows above and rank
// r+1's first p rows below (zeros beyond the first and last rank). Baseline: x is copied into a symmetric
// buffer, a host barrier, one thread per output element sums over channels and taps in fp32 reading the
// neighbours' rows in place, rounds the conv to bf16, adds the bias (rounded again, as torch's separate
// bias add), and a host barrier before the buffer is reused.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;

struct Shard {
    const bf16* above;
    const bf16* mine;
    const bf16* below;
    long long c_in, h, width, pad;
};

__device__ float framed(const Shard& s, long long c, long long row, long long col) {
    if (col < 0 || col >= s.width)
        return 0.f;
    if (row >= 0 && row < s.h)
        return __bfloat162float(s.mine[(c * s.h + row) * s.width + col]);
    const bf16* peer = row < 0 ? s.above : s.below;
    if (!peer)
        return 0.f;
    const long long peer_row = row < 0 ? s.h + row : row - s.h;
    return __bfloat162float(peer[(c * s.h + peer_row) * s.width + col]);
}

__global__ void conv(Shard s, const bf16* w, const bf16* bias, bf16* y, long long c_out, long long kh,
                     long long kw, long long stride, long long out_h, long long out_w) {
    const long long total = c_out * out_h * out_w;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        const long long o = idx / (out_h * out_w), i = (idx / out_w) % out_h, j = idx % out_w;
        float acc = 0.f;
        for (long long c = 0; c < s.c_in; ++c)
            for (long long a = 0; a < kh; ++a)
                for (long long b = 0; b < kw; ++b)
                    acc += __bfloat162float(w[((o * s.c_in + c) * kh + a) * kw + b]) *
                           framed(s, c, i * stride - s.pad + a, j * stride - s.pad + b);
        const float rounded = __bfloat162float(__float2bfloat16(acc));
        y[idx] = __float2bfloat16(rounded + __bfloat162float(bias[o]));
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    if (x.dtype != pkbw::DType::BF16)
        return ctx.fail("this sample handles bf16");
    const long long c_in = x.shape[1], h = x.shape[2], width = x.shape[3];
    const long long c_out = ctx.input(1).shape[0], kh = ctx.input(1).shape[2], kw = ctx.input(1).shape[3];
    const long long stride = static_cast<long long>(ctx.param("stride", 1.0));
    const long long pad = static_cast<long long>(ctx.param("padding", 1.0));
    const pkbw::SymmetricMemory xs = ctx.symmetric("conv87_x", x.nbytes());
    cudaMemcpyAsync(xs.local, x.data, x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    const int r = ctx.rank, last = ctx.world_size - 1;
    Shard s{r > 0 ? static_cast<const bf16*>(xs.peers[r - 1]) : nullptr,
            x.as<bf16>(),
            r < last ? static_cast<const bf16*>(xs.peers[r + 1]) : nullptr,
            c_in,
            h,
            width,
            pad};
    const long long out_h = (h + 2 * pad - kh) / stride + 1, out_w = (width + 2 * pad - kw) / stride + 1;
    conv<<<4096, 256, 0, ctx.stream()>>>(s, ctx.input(1).as<bf16>(), ctx.input(2).as<bf16>(),
                                         ctx.output(0).as<bf16>(), c_out, kh, kw, stride, out_h, out_w);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
