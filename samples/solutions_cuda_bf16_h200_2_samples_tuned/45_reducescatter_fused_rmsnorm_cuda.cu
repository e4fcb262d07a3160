// Hand-written sample candidate (not LLM output)
// PKB 45 (reduce-scatter of a flat [W*rows*hidden] bf16 input, divided by W in bf16, fp32 RMSNorm of
// the [rows, hidden] shard times gamma), tuned. Versus the baseline (staging copy, two host
// barriers, W remote reads per element):
//  - one kernel, push-based: every block pushes its rows of chunk p of the local input straight
//    into slot [rank] of peer p's symmetric receive buffer [W, rows, hidden] (16-byte stores over
//    NVLink; the own chunk goes to the own slot), so the input is read once and each byte crosses
//    a link once;
//  - a device-side barrier on the signal pads: block b meets block b of every peer, and block b
//    owns the same rows on every rank, so after it the W slots of exactly its rows have landed;
//  - one warp per row reduces the W slots from local memory in rank order, rounds the sum and the
//    division by W to bf16 (as PKB's bf16 tensors), and normalises the row in registers;
//  - a closing barrier keeps the next call's pushes from overwriting slots still being read.
// Rows are up to 256 wide (8 bf16 per lane), PKB's hidden is at most 128.
#include "pkbw/solution.h"

#include <cstdint>
#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxBlocks = 128;

__device__ void block_barrier(std::uint32_t* const* pads, int rank, int world, int channel) {
    __syncthreads();
    if (threadIdx.x < world) {
        const int peer = threadIdx.x;
        const int slot = (channel * gridDim.x + blockIdx.x) * world;
        __threadfence_system();
        // Raise our flag in the peer's pad (0 -> 1), consume the peer's in ours (1 -> 0).
        while (atomicCAS_system(pads[peer] + slot + rank, 0u, 1u) != 0u) {
        }
        while (atomicCAS_system(pads[rank] + slot + peer, 1u, 0u) != 1u) {
        }
        __threadfence_system();
    }
    __syncthreads();
}

__device__ float bf(float v) {
    return __bfloat162float(__float2bfloat16(v));
}

__global__ void rs_rmsnorm(const __nv_bfloat16* in, const __nv_bfloat16* gamma, __nv_bfloat16* out,
                           void* const* slots, std::uint32_t* const* pads, int rank, int world,
                           long long rows, int hidden, float eps) {
    const long long chunk = rows * hidden;
    const int vectors_per_row = hidden / 8;
    // Phase 1: push rows [row_begin, row_end) of every destination's chunk.
    const long long rows_per_block = (rows + gridDim.x - 1) / gridDim.x;
    const long long row_begin = blockIdx.x * rows_per_block;
    const long long row_end = row_begin + rows_per_block < rows ? row_begin + rows_per_block : rows;
    const long long vectors = (row_end - row_begin) * vectors_per_row;
    for (int k = 0; k < world; ++k) {
        const int peer = (rank + k) % world;
        const uint4* src = reinterpret_cast<const uint4*>(in + peer * chunk + row_begin * hidden);
        uint4* dst = reinterpret_cast<uint4*>(static_cast<__nv_bfloat16*>(slots[peer]) + rank * chunk +
                                              row_begin * hidden);
        for (long long i = threadIdx.x; i < vectors; i += kThreads)
            dst[i] = __ldg(src + i);
    }
    block_barrier(pads, rank, world, 0);
    // Phase 2: a warp per row of this block's range.
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const __nv_bfloat16* mine = static_cast<const __nv_bfloat16*>(slots[rank]);
    for (long long row = row_begin + warp; row < row_end; row += kWarps) {
        float x[8];
        float squares = 0.f;
        const bool active = lane < vectors_per_row;
        if (active) {
            float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
            for (int r = 0; r < world; ++r) {
                // L1 is not coherent with the peers' NVLink stores: read through L2.
                const uint4 raw =
                    __ldcg(reinterpret_cast<const uint4*>(mine + r * chunk + row * hidden + lane * 8));
                const __nv_bfloat16* e = reinterpret_cast<const __nv_bfloat16*>(&raw);
                for (int k = 0; k < 8; ++k)
                    acc[k] += __bfloat162float(e[k]);
            }
            for (int k = 0; k < 8; ++k) {
                x[k] = bf(bf(acc[k]) / static_cast<float>(world));
                squares += x[k] * x[k];
            }
        }
        for (int step = 16; step > 0; step >>= 1)
            squares += __shfl_xor_sync(0xffffffffu, squares, step);
        const float rms = rsqrtf(squares / static_cast<float>(hidden) + eps);
        if (active) {
            const uint4 graw = __ldg(reinterpret_cast<const uint4*>(gamma) + lane);
            const __nv_bfloat16* g = reinterpret_cast<const __nv_bfloat16*>(&graw);
            uint4 o;
            __nv_bfloat16* oe = reinterpret_cast<__nv_bfloat16*>(&o);
            for (int k = 0; k < 8; ++k)
                oe[k] = __float2bfloat16(x[k] * rms * __bfloat162float(g[k]));
            reinterpret_cast<uint4*>(out + row * hidden)[lane] = o;
        }
    }
    block_barrier(pads, rank, world, 1);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const long long rows = ctx.output(0).shape[0];
    const int hidden = static_cast<int>(ctx.output(0).shape[1]);
    if (in.dtype != pkbw::DType::BF16 || hidden % 8 != 0 || hidden > 256) {
        return ctx.fail("this sample handles bf16 rows of a multiple of 8, at most 256");
    }
    const pkbw::SymmetricMemory slots = ctx.symmetric("rs_rmsnorm_tuned", in.nbytes());
    long long blocks = (rows + kWarps - 1) / kWarps;
    const long long max_blocks = pkbw::kSignalPadWords / (2 * ctx.world_size);
    blocks = blocks > kMaxBlocks ? kMaxBlocks : blocks;
    blocks = blocks > max_blocks ? max_blocks : blocks;
    rs_rmsnorm<<<static_cast<unsigned>(blocks), kThreads, 0, ctx.stream()>>>(
        in.as<const __nv_bfloat16>(), ctx.input(1).as<const __nv_bfloat16>(),
        ctx.output(0).as<__nv_bfloat16>(), slots.peers_device, slots.signal_pads_device, ctx.rank,
        ctx.world_size, rows, hidden, static_cast<float>(ctx.param("eps", 1e-5)));
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
