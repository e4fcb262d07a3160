// Hand-written sample candidate (not LLM output)
// PKB 73 (vocab-parallel cross-entropy), tuned: one kernel, a warp per row (the row stays in L1
// between its passes). Each warp pushes its row max into every peer's symmetric buffer, meets the peers at a
// per-block signal-pad barrier, shifts its row in place, pushes the target logit and the sum of exp,
// meets them again and sums the W parts into the loss. Block b owns the same rows on every rank, so
// barrier channel c with block b of each peer orders exactly the values that block reads. Two
// barriers suffice across calls: a peer's next-call pushes of maxima wait for our second barrier
// (we have read ours), its pushes of parts for our first barrier of the next call.
#include "pkbw/solution.h"

#include <cstdint>
#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kChannels = 2;

__device__ void block_barrier(std::uint32_t* const* pads, int rank, int world, int channel) {
    __syncthreads();
    if (threadIdx.x < world) {
        const int peer = threadIdx.x;
        const int slot = (channel * gridDim.x + blockIdx.x) * world;
        __threadfence_system();
        while (atomicCAS_system(pads[peer] + slot + rank, 0u, 1u) != 0u) {
        }
        while (atomicCAS_system(pads[rank] + slot + peer, 1u, 0u) != 1u) {
        }
        __threadfence_system();
    }
    __syncthreads();
}

__device__ float warp_max(float v) {
    for (int off = 16; off > 0; off /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}
__device__ float warp_sum(float v) {
    for (int off = 16; off > 0; off /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// maxima: [W, rows] per rank; parts: [W, 2, rows] per rank (target logit, sum of exp).
__global__ void cross_entropy(__nv_bfloat16* logits, const std::int64_t* target, __nv_bfloat16* out,
                              void* const* maxima, void* const* parts, std::uint32_t* const* pads, int rank,
                              int world, int rows, int local) {
    const int lane = threadIdx.x % 32;
    const int first = blockIdx.x * kWarps + threadIdx.x / 32;
    const int stride = gridDim.x * kWarps;
    for (int row = first; row < rows; row += stride) {
        float m = -INFINITY;
        for (int j = lane; j < local; j += 32)
            m = fmaxf(m, __bfloat162float(logits[static_cast<long long>(row) * local + j]));
        m = warp_max(m);
        for (int p = lane; p < world; p += 32)
            static_cast<float*>(maxima[p])[rank * rows + row] = m;
    }
    block_barrier(pads, rank, world, 0);
    const float* my_maxima = static_cast<const float*>(maxima[rank]);
    for (int row = first; row < rows; row += stride) {
        float m = -INFINITY;
        for (int r = 0; r < world; ++r)
            m = fmaxf(m, my_maxima[r * rows + row]);
        __nv_bfloat16* x = logits + static_cast<long long>(row) * local;
        float sum = 0.f;
        for (int j = lane; j < local; j += 32) {
            const __nv_bfloat16 shifted = __float2bfloat16(__bfloat162float(x[j]) - m);
            x[j] = shifted;
            sum += __bfloat162float(__float2bfloat16(__expf(__bfloat162float(shifted))));
        }
        sum = __bfloat162float(__float2bfloat16(warp_sum(sum)));
        const long long t = target[row] - static_cast<long long>(rank) * local;
        __syncwarp();
        const float predicted = (t >= 0 && t < local) ? __bfloat162float(x[t]) : 0.f;
        for (int p = lane; p < world; p += 32) {
            float* dst = static_cast<float*>(parts[p]) + static_cast<long long>(rank) * 2 * rows;
            dst[row] = predicted;
            dst[rows + row] = sum;
        }
    }
    block_barrier(pads, rank, world, 1);
    const float* my_parts = static_cast<const float*>(parts[rank]);
    for (int row = first; row < rows; row += stride) {
        float predicted = 0.f, sum = 0.f;
        for (int r = lane; r < world; r += 32) {
            predicted += my_parts[r * 2 * rows + row];
            sum += my_parts[r * 2 * rows + rows + row];
        }
        predicted = warp_sum(predicted);
        sum = warp_sum(sum);
        if (lane == 0)
            out[row] = __float2bfloat16(__bfloat162float(__float2bfloat16(logf(sum))) - predicted);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const int local = static_cast<int>(in.shape[in.ndim - 1]);
    const int rows = static_cast<int>(in.numel() / local);
    if (in.dtype != pkbw::DType::BF16) {
        return ctx.fail("cross-entropy tuned: bf16 only");
    }
    const int world = ctx.world_size;
    const pkbw::SymmetricMemory maxima =
        ctx.symmetric("ce_tuned_max", static_cast<std::size_t>(world) * rows * sizeof(float));
    const pkbw::SymmetricMemory parts =
        ctx.symmetric("ce_tuned_parts", static_cast<std::size_t>(world) * 2 * rows * sizeof(float));
    int blocks = (rows + kWarps - 1) / kWarps;
    const int max_blocks = pkbw::kSignalPadWords / (kChannels * world);
    blocks = blocks > 264 ? 264 : blocks;
    blocks = blocks > max_blocks ? max_blocks : blocks;
    // The barriers use the pads of the first buffer only; both buffers are ordered by them.
    cross_entropy<<<blocks, kThreads, 0, ctx.stream()>>>(
        in.as<__nv_bfloat16>(), ctx.input(1).as<const std::int64_t>(), ctx.output(0).as<__nv_bfloat16>(),
        maxima.peers_device, parts.peers_device, maxima.signal_pads_device, ctx.rank, world, rows, local);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
