// Hand-written sample candidate (not LLM output)
// PKB 8 (all-to-all of equal chunks: rank j's output chunk r is chunk j of rank r), tuned. Versus
// the baseline (W + 1 copies, two host barriers): one kernel; every rank publishes the chunks
// meant for the other ranks in a symmetric buffer (chunk stride rounded up to 16 bytes, so every
// chunk is aligned) and copies its own chunk straight to its output; device-side barriers on the
// signal pads (per block, self-resetting) replace ctx.barrier(); each rank pulls its chunk from
// every peer with 16-byte loads, starting with the next rank so that the links are loaded evenly;
// no NCCL. A last barrier keeps a rank from overwriting its buffer (next call) while a peer still
// reads it.
#include "pkbw/solution.h"

#include <cstdint>

namespace {

constexpr int kThreads = 512;
constexpr int kMaxBlocks = 128;
constexpr int kChannels = 2;

// Barrier of block `blockIdx.x` with the same block on every rank. The signaller flips the word it
// owns in the peer's pad 0 -> 1, the waiter flips it back 1 -> 0, so the pad ends zeroed and a fast
// rank cannot signal into a word its peer has not consumed yet.
__device__ void block_barrier(std::uint32_t* const* pads, int rank, int world, int channel) {
    __syncthreads();
    if (threadIdx.x < world) {
        const int peer = threadIdx.x;
        const int slot = (channel * gridDim.x + blockIdx.x) * world;
        __threadfence_system(); // this block's writes are visible before the signal
        while (atomicCAS_system(pads[peer] + slot + rank, 0u, 1u) != 0u) {
        }
        while (atomicCAS_system(pads[rank] + slot + peer, 1u, 0u) != 1u) {
        }
        __threadfence_system();
    }
    __syncthreads();
}

// Copies bytes [0, bytes) of src to dst. 16-byte unit u always belongs to global thread
// u % (gridDim.x * blockDim.x), vector path or not, so which block touches which bytes of a range
// never depends on alignment: the per-block barriers order exactly those bytes.
__device__ void copy_units(const char* src, char* dst, long long bytes) {
    if (bytes <= 0)
        return;
    const long long units = (bytes + 15) / 16;
    const bool vector =
        ((reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst)) & 15) == 0;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long u = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
         u += stride) {
        const long long off = u * 16;
        if (vector && off + 16 <= bytes) {
            *reinterpret_cast<uint4*>(dst + off) = __ldcg(reinterpret_cast<const uint4*>(src + off));
        } else {
            const long long end = off + 16 < bytes ? off + 16 : bytes;
            for (long long i = off; i < end; ++i)
                dst[i] = static_cast<const volatile char*>(src)[i];
        }
    }
}

// Chunk copies are chunk-relative (unit u of every chunk belongs to the same thread), so block b
// pulls exactly the bytes block b of the peer published before their barrier.
__global__ void all_to_all(const char* in, char* out, long long chunk, long long stride, void* const* peers,
                           std::uint32_t* const* pads, int rank, int world) {
    char* mine = static_cast<char*>(peers[rank]);
    for (int s = 0; s < world; ++s) {
        if (s != rank)
            copy_units(in + s * chunk, mine + s * stride, chunk);
    }
    block_barrier(pads, rank, world, 0);
    for (int i = 1; i < world; ++i) {
        const int r = (rank + i) % world;
        copy_units(static_cast<const char*>(peers[r]) + rank * stride, out + r * chunk, chunk);
    }
    copy_units(in + rank * chunk, out + rank * chunk, chunk);
    block_barrier(pads, rank, world, 1);
}

int grid_for(long long units, int world) {
    long long blocks = (units + kThreads - 1) / kThreads;
    const long long pad_limit = pkbw::kSignalPadWords / (kChannels * world);
    blocks = blocks < kMaxBlocks ? blocks : kMaxBlocks;
    blocks = blocks < pad_limit ? blocks : pad_limit;
    return static_cast<int>(blocks < 1 ? 1 : blocks);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int world = ctx.world_size;
    const long long chunk = static_cast<long long>(ctx.input(0).nbytes()) / world;
    const long long stride = (chunk + 15) / 16 * 16;
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("alltoall_tuned", static_cast<std::size_t>(stride * world));
    all_to_all<<<grid_for((chunk + 15) / 16, world), kThreads, 0, ctx.stream()>>>(
        static_cast<const char*>(ctx.input(0).data), static_cast<char*>(ctx.output(0).data), chunk, stride,
        sym.peers_device, sym.signal_pads_device, ctx.rank, world);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
