// Hand-written sample candidate (not LLM output)
// PKB 6 (gather onto param `dst`: the destination returns [W, M, N] with rank r's tensor in slice r;
// every other rank returns its own input, shape [M, N]), tuned. Versus the baseline (W + 1 copies,
// two host barriers): one kernel; the other ranks publish their input in a symmetric buffer;
// device-side barriers on the signal pads (per block, self-resetting) replace ctx.barrier(); the
// destination pulls every peer's buffer with 16-byte loads (starting with the next rank, so the
// links are loaded evenly) and copies its own input locally, while the others copy their input to
// their output; no NCCL. A last barrier keeps a rank from overwriting its buffer (next call)
// while the destination still reads it.
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

// Every copy covers a whole tensor from offset 0 of the published buffer, so block b reads exactly
// the bytes block b of the peer published before their barrier.
__global__ void gather(const char* in, char* out, long long bytes, void* const* peers,
                       std::uint32_t* const* pads, int rank, int world, int dst) {
    if (rank != dst)
        copy_units(in, static_cast<char*>(peers[rank]), bytes);
    block_barrier(pads, rank, world, 0);
    if (rank == dst) {
        for (int i = 1; i < world; ++i) {
            const int r = (rank + i) % world;
            copy_units(static_cast<const char*>(peers[r]), out + r * bytes, bytes);
        }
        copy_units(in, out + dst * bytes, bytes);
    } else {
        copy_units(in, out, bytes);
    }
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
    const int dst = static_cast<int>(ctx.param("dst", 0));
    if (dst < 0 || dst >= world) {
        return ctx.fail("gather tuned: param dst is outside [0, world_size)");
    }
    // The input is [M, N] on every rank (the output is not), so the grid is the same everywhere.
    const long long bytes = static_cast<long long>(ctx.input(0).nbytes());
    const pkbw::SymmetricMemory sym = ctx.symmetric("gather_tuned", static_cast<std::size_t>(bytes));
    gather<<<grid_for((bytes + 15) / 16, world), kThreads, 0, ctx.stream()>>>(
        static_cast<const char*>(ctx.input(0).data), static_cast<char*>(ctx.output(0).data), bytes,
        sym.peers_device, sym.signal_pads_device, ctx.rank, world, dst);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
