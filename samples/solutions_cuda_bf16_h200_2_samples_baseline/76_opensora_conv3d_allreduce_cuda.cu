// Hand-written sample candidate (not LLM output)
// PKB 76 (input [1, c, D, H, W] bf16 = this rank's input-channel shard, weight [C, c, kd, kh, kw], bias
// [C]; params stride, padding, dilation, groups = 1): every rank convolves its shard with its weight
// slice, the partial outputs [1, C, D', H', W'] are summed over the ranks, then the bias is added.
// Baseline: one thread per output element sums over channels and taps in fp32 and rounds the partial to
// bf16 into a symmetric buffer; after a host barrier one thread per element adds the ranks' partials in
// rank order (rounded to bf16 after each add, as an all-reduce in bf16 does), then the bias (rounded
// again, as torch's separate add); a host barrier before the buffer is reused.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;

constexpr int kMaxRanks = 8;

struct Conv3d {
    long long c_in, c_out, in[3], k[3], out[3], stride, pad, dilation;
};

__global__ void convolve(Conv3d g, const bf16* x, const bf16* w, bf16* partial) {
    const long long positions = g.out[0] * g.out[1] * g.out[2], total = g.c_out * positions;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        const long long o = idx / positions, p = idx % positions;
        const long long d = p / (g.out[1] * g.out[2]), h = (p / g.out[2]) % g.out[1], j = p % g.out[2];
        float acc = 0.f;
        for (long long c = 0; c < g.c_in; ++c)
            for (long long a = 0; a < g.k[0]; ++a) {
                const long long id = d * g.stride - g.pad + a * g.dilation;
                if (id < 0 || id >= g.in[0])
                    continue;
                for (long long b = 0; b < g.k[1]; ++b) {
                    const long long ih = h * g.stride - g.pad + b * g.dilation;
                    if (ih < 0 || ih >= g.in[1])
                        continue;
                    for (long long e = 0; e < g.k[2]; ++e) {
                        const long long iw = j * g.stride - g.pad + e * g.dilation;
                        if (iw < 0 || iw >= g.in[2])
                            continue;
                        acc +=
                            __bfloat162float(w[(((o * g.c_in + c) * g.k[0] + a) * g.k[1] + b) * g.k[2] + e]) *
                            __bfloat162float(x[((c * g.in[0] + id) * g.in[1] + ih) * g.in[2] + iw]);
                    }
                }
            }
        partial[idx] = __float2bfloat16(acc);
    }
}

struct Peers {
    const bf16* partial[kMaxRanks];
};

__global__ void sum_and_bias(Peers peers, int world, const bf16* bias, long long positions, long long total,
                             bf16* y) {
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        bf16 sum = peers.partial[0][idx];
        for (int r = 1; r < world; ++r)
            sum = __float2bfloat16(__bfloat162float(sum) + __bfloat162float(peers.partial[r][idx]));
        y[idx] = __float2bfloat16(__bfloat162float(sum) + __bfloat162float(bias[idx / positions]));
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    if (x.dtype != pkbw::DType::BF16)
        return ctx.fail("this sample handles bf16");
    if (ctx.world_size > kMaxRanks)
        return ctx.fail("this sample handles at most 8 ranks");
    if (static_cast<long long>(ctx.param("groups", 1.0)) != 1)
        return ctx.fail("this sample handles groups = 1");
    Conv3d g{};
    g.c_in = x.shape[1];
    g.c_out = w.shape[0];
    g.stride = static_cast<long long>(ctx.param("stride", 1.0));
    g.pad = static_cast<long long>(ctx.param("padding", 0.0));
    g.dilation = static_cast<long long>(ctx.param("dilation", 1.0));
    for (int axis = 0; axis < 3; ++axis) {
        g.in[axis] = x.shape[2 + axis];
        g.k[axis] = w.shape[2 + axis];
        g.out[axis] = (g.in[axis] + 2 * g.pad - g.dilation * (g.k[axis] - 1) - 1) / g.stride + 1;
    }
    const pkbw::TensorView& y = ctx.output(0);
    const long long total = y.numel();
    const pkbw::SymmetricMemory partials = ctx.symmetric("conv76_partial", y.nbytes());
    convolve<<<4096, 256, 0, ctx.stream()>>>(g, x.as<bf16>(), w.as<bf16>(),
                                             static_cast<bf16*>(partials.local));
    ctx.barrier();
    Peers peers{};
    for (int r = 0; r < ctx.world_size; ++r)
        peers.partial[r] = static_cast<const bf16*>(partials.peers[r]);
    sum_and_bias<<<4096, 256, 0, ctx.stream()>>>(peers, ctx.world_size, ctx.input(2).as<bf16>(),
                                                 total / g.c_out, total, y.as<bf16>());
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
