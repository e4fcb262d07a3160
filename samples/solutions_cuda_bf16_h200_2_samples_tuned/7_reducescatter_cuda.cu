// Hand-written sample candidate (not LLM output)
// PKB 7 (reduce-scatter, sum: rank r returns row block r of the sum of the [W*M, N] inputs), tuned.
// Versus the baseline (memcpy of the whole input, host barrier, sum kernel, host barrier):
//  - one kernel; device-side barriers on the signal pads (block b meets block b of every peer and
//    leaves the pad zeroed), no ctx.barrier(), no NCCL;
//  - each rank publishes only the W-1 row blocks the peers need (block stride rounded up to 16
//    bytes) and reads its own block in place;
//  - 16-byte vector loads from every peer, fp32 accumulation in rank order, element-wise only at
//    the tail or when M*N is not a multiple of the vector width.
// A last barrier keeps a rank from overwriting its buffer (next call) while a peer still reads it.
#include "pkbw/solution.h"

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kThreads = 512;
constexpr int kMaxBlocks = 128;
constexpr int kChannels = 2;

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

// Copies and sums are block-relative (unit u of every row block belongs to the same thread), so
// block b reads exactly the elements block b of each peer published before their barrier.
template <class T>
__global__ void reduce_scatter(const T* in, T* out, long long count, long long stride, void* const* peers,
                               std::uint32_t* const* pads, int rank, int world, bool vector) {
    T* mine = static_cast<T*>(peers[rank]);
    for (int s = 0; s < world; ++s) {
        if (s != rank)
            copy_elems(in + s * count, mine + s * stride, count, vector);
    }
    block_barrier(pads, rank, world, 0);
    sum_elems(Sources<T>{peers, in + rank * count, rank, rank * stride}, world, out, count, vector);
    block_barrier(pads, rank, world, 1);
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
void run(const pkbw::Context& ctx) {
    constexpr int V = 16 / sizeof(T);
    const int world = ctx.world_size;
    const long long count = ctx.output(0).numel(); // M * N, one row block
    const T* src = ctx.input(0).as<const T>();
    T* out = ctx.output(0).as<T>();
    // Row block s starts at in + s * count: aligned for every s only when count is a multiple of V.
    const bool vector = aligned(src) && aligned(out) && count % V == 0;
    const long long stride = (count + V - 1) / V * V;
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("reducescatter_tuned", static_cast<std::size_t>(stride * world) * sizeof(T));
    reduce_scatter<T><<<grid_for((count + V - 1) / V, world), kThreads, 0, ctx.stream()>>>(
        src, out, count, stride, sym.peers_device, sym.signal_pads_device, ctx.rank, world, vector);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    switch (ctx.input(0).dtype) {
    case pkbw::DType::BF16:
        run<__nv_bfloat16>(ctx);
        break;
    case pkbw::DType::F16:
        run<__half>(ctx);
        break;
    case pkbw::DType::F32:
        run<float>(ctx);
        break;
    default:
        return ctx.fail("reduce-scatter tuned: only bf16, f16 and f32 are supported");
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
