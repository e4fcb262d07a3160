// Hand-written sample candidate (not LLM output)
// PKB 71 (x [1, C, 2L] bf16 = zigzag chunks a | b, weight [C, 1, 7]; chunk a is convolved after the
// last 6 samples of rank r-1's chunk a (zeros on rank 0), chunk b after the last 6 samples of rank
// r+1's chunk b (the last rank uses its own chunk a's); depthwise, no padding, fp32 accumulation),
// tuned: only the two 6-sample tails of every channel are published (a 12·C-element symmetric buffer
// written by a small kernel, instead of a copy of x), and the convolution stages a tile of 256
// outputs plus its 6-sample left context in shared memory, so each input sample is read from global
// memory once per tile; the 7 weights of the channel sit in registers.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;
constexpr int kTaps = 7, kPad = kTaps - 1, kTile = 256;

// tails[which][c][k] = x[c, which·L + L − 6 + k]
__global__ void pack_tails(const bf16* x, long long c_n, long long len, bf16* tails) {
    const long long total = 2 * c_n * kPad;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const long long which = e / (c_n * kPad), c = (e / kPad) % c_n, k = e % kPad;
        tails[e] = x[c * 2 * len + which * len + len - kPad + k];
    }
}

// Block = (tile, chunk, channel). prev_tails / next_tails: the neighbours' tail buffers (null: zeros);
// next_which: which tail of next_tails chunk b uses (1, or 0 on the last rank: its own a-tail).
__global__ void conv_tiles(const bf16* x, const bf16* w, const bf16* prev_tails, const bf16* next_tails,
                           int next_which, long long c_n, long long len, bf16* y) {
    __shared__ float buf[kTile + kPad];
    const long long c = blockIdx.z, which = blockIdx.y, t0 = static_cast<long long>(blockIdx.x) * kTile;
    const bf16* row = x + c * 2 * len + which * len;
    float wk[kTaps];
    for (int k = 0; k < kTaps; ++k)
        wk[k] = __bfloat162float(w[c * kTaps + k]);
    for (int i = threadIdx.x; i < kTile + kPad; i += blockDim.x) {
        const long long s = t0 + i - kPad; // position in the chunk; < 0 is the halo
        float v = 0.f;
        if (s >= 0 && s < len) {
            v = __bfloat162float(row[s]);
        } else if (s < 0) {
            const bf16* tails = which == 0 ? prev_tails : next_tails;
            const long long tail = which == 0 ? 0 : next_which;
            if (tails)
                v = __bfloat162float(tails[(tail * c_n + c) * kPad + kPad + s]);
        }
        buf[i] = v;
    }
    __syncthreads();
    const long long t = t0 + threadIdx.x;
    if (t < len) {
        float acc = 0.f;
        for (int k = 0; k < kTaps; ++k)
            acc += wk[k] * buf[threadIdx.x + k];
        y[c * 2 * len + which * len + t] = __float2bfloat16(acc);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    if (x.dtype != pkbw::DType::BF16 || ctx.input(1).shape[2] != kTaps)
        return ctx.fail("this sample handles bf16 with 7 taps");
    const long long c_n = x.shape[1], len = x.shape[2] / 2;
    const int last = ctx.world_size - 1;
    const pkbw::SymmetricMemory tails = ctx.symmetric("conv71_tails", 2 * c_n * kPad * sizeof(bf16));
    pack_tails<<<64, 256, 0, ctx.stream()>>>(x.as<bf16>(), c_n, len, static_cast<bf16*>(tails.local));
    ctx.barrier();
    const bf16* prev = ctx.rank > 0 ? static_cast<const bf16*>(tails.peers[ctx.rank - 1]) : nullptr;
    const bf16* next = static_cast<const bf16*>(tails.peers[ctx.rank == last ? ctx.rank : ctx.rank + 1]);
    const dim3 grid(static_cast<unsigned>((len + kTile - 1) / kTile), 2, static_cast<unsigned>(c_n));
    conv_tiles<<<grid, kTile, 0, ctx.stream()>>>(x.as<bf16>(), ctx.input(1).as<bf16>(), prev, next,
                                                 ctx.rank == last ? 0 : 1, c_n, len,
                                                 ctx.output(0).as<bf16>());
    ctx.barrier(); // neighbours may still read this rank's tails
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
