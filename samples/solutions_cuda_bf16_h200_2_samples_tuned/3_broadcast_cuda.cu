// Hand-written sample candidate (not LLM output)
// PKB 3 (broadcast from param `src`), tuned. Versus the baseline (two copies, two host barriers):
//  - one kernel; device-side barriers on the signal pads (block b meets block b of every peer, and
//    every barrier leaves its words zeroed), no ctx.barrier(), no NCCL;
//  - 16-byte vector accesses, byte-wise only at an unaligned tail;
//  - small tensors or W = 2: every rank pulls the source's published buffer (one-shot);
//  - large tensors with W > 2: scatter + all-gather (rank r pulls slice r from the source and
//    republishes it, then every rank pulls slice s from rank s), so the source sends about 2S
//    instead of (W-1)S over its links.
// A last barrier keeps any rank from overwriting its buffer (next call) while a peer still reads it.
#include "pkbw/solution.h"

#include <cstdint>

namespace {

constexpr int kThreads = 512;
constexpr int kMaxBlocks = 128;
constexpr int kChannels = 3;                     // barriers per call (two-shot)
constexpr std::size_t kOneShotBytes = 512 << 10; // below this, latency beats bandwidth

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

// Bytes of slice s: [s * slice, min((s + 1) * slice, bytes)).
__device__ long long slice_len(int s, long long slice, long long bytes) {
    const long long begin = s * slice;
    const long long end = begin + slice < bytes ? begin + slice : bytes;
    return end - begin;
}

__global__ void one_shot(const char* in, char* out, long long bytes, void* const* peers,
                         std::uint32_t* const* pads, int rank, int world, int src) {
    if (rank == src)
        copy_units(in, static_cast<char*>(peers[rank]), bytes);
    block_barrier(pads, rank, world, 0);
    copy_units(rank == src ? in : static_cast<const char*>(peers[src]), out, bytes);
    block_barrier(pads, rank, world, 1);
}

// Every copy below is slice-relative (unit u of slice s belongs to the same thread for every s),
// so block b reads exactly the units block b of the writer wrote before the barrier in between.
__global__ void two_shot(const char* in, char* out, long long bytes, long long slice, void* const* peers,
                         std::uint32_t* const* pads, int rank, int world, int src) {
    char* mine = static_cast<char*>(peers[rank]);
    if (rank == src) {
        for (int s = 0; s < world; ++s)
            copy_units(in + s * slice, mine + s * slice, slice_len(s, slice, bytes));
    }
    block_barrier(pads, rank, world, 0);
    // Slice `rank` from the source into this rank's buffer (the source already holds it).
    if (rank != src) {
        const long long off = rank * slice;
        copy_units(static_cast<const char*>(peers[src]) + off, mine + off, slice_len(rank, slice, bytes));
    }
    block_barrier(pads, rank, world, 1);
    if (rank == src) {
        copy_units(in, out, bytes);
    } else {
        for (int i = 0; i < world; ++i) {
            const int s = (rank + i) % world; // start at our own slice: spreads the load over links
            const long long off = s * slice;
            copy_units(static_cast<const char*>(peers[s]) + off, out + off, slice_len(s, slice, bytes));
        }
    }
    block_barrier(pads, rank, world, 2);
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
    const pkbw::TensorView& in = ctx.input(0);
    const int world = ctx.world_size;
    const int src = static_cast<int>(ctx.param("src", 0));
    if (src < 0 || src >= world) {
        return ctx.fail("broadcast tuned: param src is outside [0, world_size)");
    }
    const long long bytes = static_cast<long long>(in.nbytes());
    const bool two = world > 2 && bytes > static_cast<long long>(kOneShotBytes);
    // Slices are multiples of 16 bytes so that every slice of an aligned buffer is aligned.
    const long long slice = ((bytes + world - 1) / world + 15) / 16 * 16;
    const std::size_t sym_bytes = static_cast<std::size_t>(two ? slice * world : bytes);
    const pkbw::SymmetricMemory sym = ctx.symmetric("broadcast_tuned", sym_bytes > 0 ? sym_bytes : 16);
    const char* src_data = static_cast<const char*>(in.data);
    char* out = static_cast<char*>(ctx.output(0).data);
    if (two) {
        two_shot<<<grid_for(slice / 16, world), kThreads, 0, ctx.stream()>>>(
            src_data, out, bytes, slice, sym.peers_device, sym.signal_pads_device, ctx.rank, world, src);
    } else {
        one_shot<<<grid_for((bytes + 15) / 16, world), kThreads, 0, ctx.stream()>>>(
            src_data, out, bytes, sym.peers_device, sym.signal_pads_device, ctx.rank, world, src);
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
