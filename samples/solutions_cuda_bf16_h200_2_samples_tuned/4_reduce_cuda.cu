// Hand-written sample candidate (not LLM output)
// PKB 4 (reduce, sum, onto param `dst`; every other rank returns its input unchanged), tuned.
// Versus the baseline (memcpy, host barrier, sum kernel, host barrier):
//  - one kernel; device-side barriers on the signal pads (block b meets block b of every peer and
//    leaves the pad zeroed), no ctx.barrier(), no NCCL;
//  - 16-byte vector accesses with fp32 accumulation, element-wise only at the tail;
//  - small tensors or W = 2: the destination reads every peer's published buffer (one-shot);
//  - large tensors with W > 2: rank r reduces slice r in place in its own buffer, then the
//    destination gathers the reduced slices (two-shot), so it receives 2(W-1)/W S, not (W-1)S.
// Non-destination ranks copy their input to their output after publishing it, while the
// destination sums. A last barrier protects the buffers from the next call.
#include "pkbw/solution.h"

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kThreads = 512;
constexpr int kMaxBlocks = 128;
constexpr int kChannels = 3;
constexpr std::size_t kOneShotBytes = 512 << 10;

__device__ float to_float(float v) {
    return v;
}
__device__ float to_float(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
__device__ float to_float(__half v) {
    return __half2float(v);
}
template <class T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) {
    return v;
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
    return __float2bfloat16(v);
}
template <>
__device__ __half from_float<__half>(float v) {
    return __float2half(v);
}

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

// Unit u (elements [u*V, u*V + V), V = 16 / sizeof(T)) always belongs to global thread
// u % (gridDim.x * blockDim.x), on the vector path or not: a block touches the same elements of a
// range on every rank, which is what a per-block barrier orders.
template <class T>
__device__ void copy_elems(const T* src, T* dst, long long count, bool vector) {
    constexpr int V = 16 / sizeof(T);
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long u = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; u * V < count;
         u += stride) {
        const long long i = u * V;
        if (vector && i + V <= count) {
            *reinterpret_cast<uint4*>(dst + i) = __ldcg(reinterpret_cast<const uint4*>(src + i));
        } else {
            for (long long e = i; e < count && e < i + V; ++e)
                dst[e] = static_cast<const volatile T*>(src)[e];
        }
    }
}

// Rank p's operand: `own` for p == own_rank (this rank's input, read in place), else p's
// symmetric buffer from `offset`.
template <class T>
struct Sources {
    void* const* peers;
    const T* own;
    int own_rank;
    long long offset;
    __device__ const T* operator()(int p) const {
        return p == own_rank ? own : static_cast<const T*>(peers[p]) + offset;
    }
};

// dst[e] = sum over p in rank order of src(p)[e], e in [0, count), accumulated in fp32.
template <class T>
__device__ void sum_elems(Sources<T> src, int world, T* dst, long long count, bool vector) {
    constexpr int V = 16 / sizeof(T);
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long u = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; u * V < count;
         u += stride) {
        const long long i = u * V;
        if (vector && i + V <= count) {
            float acc[V];
            for (int k = 0; k < V; ++k)
                acc[k] = 0.f;
            for (int p = 0; p < world; ++p) {
                const uint4 raw = __ldcg(reinterpret_cast<const uint4*>(src(p) + i));
                const T* e = reinterpret_cast<const T*>(&raw);
                for (int k = 0; k < V; ++k)
                    acc[k] += to_float(e[k]);
            }
            uint4 packed;
            T* e = reinterpret_cast<T*>(&packed);
            for (int k = 0; k < V; ++k)
                e[k] = from_float<T>(acc[k]);
            *reinterpret_cast<uint4*>(dst + i) = packed;
        } else {
            for (long long e = i; e < count && e < i + V; ++e) {
                float s = 0.f;
                for (int p = 0; p < world; ++p)
                    s += to_float(static_cast<const volatile T*>(src(p))[e]);
                dst[e] = from_float<T>(s);
            }
        }
    }
}

// Elements of slice s: [s * slice, min((s + 1) * slice, count)).
__device__ long long slice_len(int s, long long slice, long long count) {
    const long long left = count - s * slice;
    return left < 0 ? 0 : (left < slice ? left : slice);
}

template <class T>
__global__ void one_shot(const T* in, T* out, long long count, void* const* peers, std::uint32_t* const* pads,
                         int rank, int world, int dst, bool vector) {
    if (rank != dst) // the destination reads its own input in place
        copy_elems(in, static_cast<T*>(peers[rank]), count, vector);
    block_barrier(pads, rank, world, 0);
    if (rank == dst)
        sum_elems(Sources<T>{peers, in, dst, 0}, world, out, count, vector);
    else
        copy_elems(in, out, count, vector);
    block_barrier(pads, rank, world, 1);
}

// All copies and sums are slice-relative: unit u of slice s belongs to the same thread for every s.
template <class T>
__global__ void two_shot(const T* in, T* out, long long count, long long slice, void* const* peers,
                         std::uint32_t* const* pads, int rank, int world, int dst, bool vector) {
    T* mine = static_cast<T*>(peers[rank]);
    for (int s = 0; s < world; ++s)
        copy_elems(in + s * slice, mine + s * slice, slice_len(s, slice, count), vector);
    block_barrier(pads, rank, world, 0);
    // Slice `rank` of every buffer, summed in place here (peers only read the other slices of it),
    // or straight into the output on the destination.
    const long long off = rank * slice;
    T* target = rank == dst ? out + off : mine + off;
    sum_elems(Sources<T>{peers, nullptr, -1, off}, world, target, slice_len(rank, slice, count), vector);
    block_barrier(pads, rank, world, 1);
    if (rank == dst) {
        for (int i = 1; i < world; ++i) {
            const int s = (rank + i) % world;
            copy_elems(static_cast<const T*>(peers[s]) + s * slice, out + s * slice,
                       slice_len(s, slice, count), vector);
        }
    } else {
        copy_elems(in, out, count, vector);
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

bool aligned(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

template <class T>
void run(const pkbw::Context& ctx, int dst) {
    constexpr int V = 16 / sizeof(T);
    const pkbw::TensorView& in = ctx.input(0);
    const int world = ctx.world_size;
    const long long count = in.numel();
    const T* src = in.as<const T>();
    T* out = ctx.output(0).as<T>();
    const bool vector = aligned(src) && aligned(out);
    const bool two = world > 2 && in.nbytes() > kOneShotBytes;
    const long long slice = ((count + world - 1) / world + V - 1) / V * V; // aligned slices
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("reduce_tuned", static_cast<std::size_t>(slice * world) * sizeof(T));
    if (two) {
        two_shot<T><<<grid_for(slice / V, world), kThreads, 0, ctx.stream()>>>(
            src, out, count, slice, sym.peers_device, sym.signal_pads_device, ctx.rank, world, dst, vector);
    } else {
        one_shot<T><<<grid_for((count + V - 1) / V, world), kThreads, 0, ctx.stream()>>>(
            src, out, count, sym.peers_device, sym.signal_pads_device, ctx.rank, world, dst, vector);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int dst = static_cast<int>(ctx.param("dst", 0));
    if (dst < 0 || dst >= ctx.world_size) {
        return ctx.fail("reduce tuned: param dst is outside [0, world_size)");
    }
    switch (ctx.input(0).dtype) {
    case pkbw::DType::BF16:
        run<__nv_bfloat16>(ctx, dst);
        break;
    case pkbw::DType::F16:
        run<__half>(ctx, dst);
        break;
    case pkbw::DType::F32:
        run<float>(ctx, dst);
        break;
    default:
        return ctx.fail("reduce tuned: only bf16, f16 and f32 are supported");
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
