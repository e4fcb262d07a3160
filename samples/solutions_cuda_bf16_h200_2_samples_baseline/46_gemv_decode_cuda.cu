// Hand-written sample candidate (not LLM output)
// PKB 46 (vocab-parallel GEMV decode), baseline: one warp per vocabulary row computes the row's
// logit for every token into a symmetric buffer; after a host barrier a copy kernel gathers every
// rank's logits into the [t, V] output.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 256;

__global__ void gemv(const __nv_bfloat16* h, const __nv_bfloat16* w, const __nv_bfloat16* b,
                     __nv_bfloat16* logits, long long tokens, long long hidden, long long local) {
    const long long row = blockIdx.x * (kThreads / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= local)
        return;
    for (long long t = 0; t < tokens; ++t) {
        float dot = 0.f;
        for (long long k = lane; k < hidden; k += 32)
            dot += __bfloat162float(h[t * hidden + k]) * __bfloat162float(w[row * hidden + k]);
        for (int off = 16; off > 0; off /= 2)
            dot += __shfl_xor_sync(0xffffffffu, dot, off);
        if (lane == 0) {
            // PKB rounds the matmul to bf16, then adds the bias.
            const float rounded = __bfloat162float(__float2bfloat16(dot));
            logits[t * local + row] = __float2bfloat16(rounded + __bfloat162float(b[row]));
        }
    }
}

__global__ void gather(void* const* peers, __nv_bfloat16* out, int world, long long tokens, long long local) {
    const long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
    if (i >= world * tokens * local)
        return;
    const long long v = i % local, t = (i / local) % tokens;
    const int r = static_cast<int>(i / (local * tokens));
    out[t * world * local + r * local + v] = static_cast<const __nv_bfloat16*>(peers[r])[t * local + v];
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& h = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    if (h.dtype != pkbw::DType::BF16) {
        return ctx.fail("gemv-decode baseline: bf16 only");
    }
    const long long tokens = h.shape[0], hidden = h.shape[1], local = w.shape[0];
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("gemv_baseline", static_cast<std::size_t>(tokens * local) * sizeof(__nv_bfloat16));
    const long long rows_per_block = kThreads / 32;
    gemv<<<static_cast<unsigned>((local + rows_per_block - 1) / rows_per_block), kThreads, 0, ctx.stream()>>>(
        h.as<const __nv_bfloat16>(), w.as<const __nv_bfloat16>(), ctx.input(2).as<const __nv_bfloat16>(),
        static_cast<__nv_bfloat16*>(sym.local), tokens, hidden, local);
    ctx.barrier();
    const long long total = ctx.world_size * tokens * local;
    gather<<<static_cast<unsigned>((total + kThreads - 1) / kThreads), kThreads, 0, ctx.stream()>>>(
        sym.peers_device, ctx.output(0).as<__nv_bfloat16>(), ctx.world_size, tokens, local);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
