// Hand-written sample candidate (not LLM output)
// PKB 34 (all-gather of [M, N] shards into [W*M, N]), tuned: no staging copy and no host barrier.
// One kernel: each block writes its slice of the local shard into its own rows of every peer's
// output directly (push over NVLink with 16-byte stores), then meets block b of every peer at a
// device-side barrier on the signal pads so that, when the kernel ends, every peer's slice has
// landed in our output. Pushing instead of pulling needs the peers' output addresses, which change
// from call to call, so each rank's blocks publish its output pointer in a small symmetric table first
// (from the kernel's arguments) and meet once before pushing (the table entry is read after that first
// barrier).
#include "pkbw/solution.h"

#include <cstdint>

namespace {

constexpr int kThreads = 512;
constexpr int kChannels = 3; // barriers per call: table published, data pushed, table reusable

__device__ void block_barrier(std::uint32_t* const* pads, int rank, int world, int channel) {
    __syncthreads();
    if (threadIdx.x < world) {
        const int peer = threadIdx.x;
        const int slot = (channel * gridDim.x + blockIdx.x) * world;
        __threadfence_system();
        // Raise our flag in the peer's pad (0 -> 1) and consume the peer's flag in ours (1 -> 0),
        // so every pad word is zero again when the barrier is over.
        while (atomicCAS_system(pads[peer] + slot + rank, 0u, 1u) != 0u) {
        }
        while (atomicCAS_system(pads[rank] + slot + peer, 1u, 0u) != 1u) {
        }
        __threadfence_system();
    }
    __syncthreads();
}

__global__ void push_all_gather(const char* x, char* out, std::size_t bytes, void* const* tables,
                                std::uint32_t* const* pads, int rank, int world, bool vector) {
    // Every block publishes this rank's output pointer (the same value) before its first barrier, so
    // that block b of a peer, past that barrier with our block b, reads it. A kernel argument, not a
    // copy from the host: a CUDA graph of the call replays it as it was.
    if (threadIdx.x == 0) {
        *static_cast<char**>(tables[rank]) = out;
        __threadfence_system();
    }
    block_barrier(pads, rank, world, 0); // every peer's output pointer is in its table
    const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (int k = 0; k < world; ++k) {
        const int peer = (rank + k) % world; // stagger the targets so links are loaded evenly
        char* dst = *static_cast<char* const*>(tables[peer]) + static_cast<std::size_t>(rank) * bytes;
        if (vector) {
            const uint4* s = reinterpret_cast<const uint4*>(x);
            uint4* d = reinterpret_cast<uint4*>(dst);
            for (std::size_t i = tid; i < bytes / 16; i += stride)
                d[i] = __ldg(s + i);
        } else {
            for (std::size_t i = tid; i < bytes; i += stride)
                dst[i] = x[i];
        }
    }
    block_barrier(pads, rank, world, 1); // every peer has pushed its slice into our output
    block_barrier(pads, rank, world, 2); // nobody still reads our table: the next call may rewrite it
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    void* out = ctx.output(0).data;
    const std::size_t bytes = x.nbytes();
    const int world = ctx.world_size;
    if (world == 1) {
        cudaMemcpyAsync(out, x.data, bytes, cudaMemcpyDeviceToDevice, ctx.stream());
    } else {
        const pkbw::SymmetricMemory table = ctx.symmetric("ulysses_agt_tuned", sizeof(void*));
        const bool vector = bytes % 16 == 0 && reinterpret_cast<std::uintptr_t>(x.data) % 16 == 0 &&
                            reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
        const std::size_t work = vector ? bytes / 16 : bytes;
        std::size_t blocks = (work + kThreads - 1) / kThreads;
        const std::size_t max_blocks = pkbw::kSignalPadWords / (kChannels * world);
        blocks = blocks < 1 ? 1 : (blocks > 132 ? 132 : blocks);
        blocks = blocks > max_blocks ? max_blocks : blocks;
        push_all_gather<<<static_cast<int>(blocks), kThreads, 0, ctx.stream()>>>(
            static_cast<const char*>(x.data), static_cast<char*>(out), bytes, table.peers_device,
            table.signal_pads_device, ctx.rank, world, vector);
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
