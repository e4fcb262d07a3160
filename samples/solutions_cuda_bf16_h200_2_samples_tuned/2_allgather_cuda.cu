// Hand-written sample candidate (not LLM output)
// PKB 2 (all-gather into [W, M, N]), tuned: one kernel that publishes the input in a symmetric
// buffer, meets the peers at a device-side barrier on the signal pads, then pulls every peer's
// buffer with 16-byte loads. Block b copies the same byte ranges on every rank, so a per-block
// barrier with block b of each peer orders exactly the data that block reads.
#include "pkbw/solution.h"

#include <cstdint>

namespace {

constexpr int kThreads = 512;
constexpr int kChannels = 2;

__device__ void block_barrier(std::uint32_t* const* pads, int rank, int world, int channel) {
    __syncthreads();
    if (threadIdx.x < world) {
        const int peer = threadIdx.x;
        const int slot = (channel * gridDim.x + blockIdx.x) * world;
        __threadfence_system();
        // Signal 0 -> 1 in the peer's pad, consume 1 -> 0 in ours: the pad ends zeroed.
        while (atomicCAS_system(pads[peer] + slot + rank, 0u, 1u) != 0u) {
        }
        while (atomicCAS_system(pads[rank] + slot + peer, 1u, 0u) != 1u) {
        }
        __threadfence_system();
    }
    __syncthreads();
}

// Copies `bytes` from src to dst: 16-byte words when both are aligned and the size allows, bytes
// otherwise. Thread layout is identical on every rank.
__device__ void copy_range(const char* src, char* dst, std::size_t bytes, bool vector) {
    const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    if (vector) {
        const uint4* s = reinterpret_cast<const uint4*>(src);
        uint4* d = reinterpret_cast<uint4*>(dst);
        for (std::size_t i = tid; i < bytes / 16; i += stride)
            d[i] = __ldcg(s + i);
    } else {
        for (std::size_t i = tid; i < bytes; i += stride)
            dst[i] = static_cast<const volatile char*>(src)[i];
    }
}

__global__ void all_gather(const char* in, char* out, std::size_t bytes, void* const* peers,
                           std::uint32_t* const* pads, int rank, int world, bool vector) {
    copy_range(in, static_cast<char*>(peers[rank]), bytes, vector);
    block_barrier(pads, rank, world, 0);
    for (int s = 0; s < world; ++s)
        copy_range(static_cast<const char*>(peers[s]), out + s * bytes, bytes, vector);
    block_barrier(pads, rank, world, 1); // peers are done reading before our next call writes
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const std::size_t bytes = in.nbytes();
    const int world = ctx.world_size;
    if (world == 1) {
        cudaMemcpyAsync(out.data, in.data, bytes, cudaMemcpyDeviceToDevice, ctx.stream());
    } else {
        const pkbw::SymmetricMemory sym = ctx.symmetric("allgather_tuned", bytes);
        const bool vector = bytes % 16 == 0 && reinterpret_cast<std::uintptr_t>(in.data) % 16 == 0 &&
                            reinterpret_cast<std::uintptr_t>(out.data) % 16 == 0;
        const std::size_t work = vector ? bytes / 16 : bytes;
        std::size_t blocks = (work + kThreads - 1) / kThreads;
        const std::size_t max_blocks = pkbw::kSignalPadWords / (kChannels * world);
        blocks = blocks < 1 ? 1 : (blocks > 64 ? 64 : blocks);
        blocks = blocks > max_blocks ? max_blocks : blocks;
        all_gather<<<static_cast<int>(blocks), kThreads, 0, ctx.stream()>>>(
            static_cast<const char*>(in.data), static_cast<char*>(out.data), bytes, sym.peers_device,
            sym.signal_pads_device, ctx.rank, world, vector);
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
