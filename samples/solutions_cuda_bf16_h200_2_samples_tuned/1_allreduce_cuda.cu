// Hand-written sample candidate (not LLM output)
// PKB 1 (all-reduce, sum), tuned: one kernel, 16-byte vector accesses, device-side barriers on the
// symmetric buffer's signal pads instead of host barriers.
//  - small tensors: one-shot (every rank reads every peer's whole buffer and sums);
//  - large tensors: two-shot (rank r reduces slice r from all peers into its own buffer, then every
//    rank gathers the reduced slices), which moves 2(W-1)/W of the data per rank instead of W-1.
// Every block barriers with the same block on the other ranks. That suffices because block b
// touches the same element ranges on every rank in every phase.
#include "pkbw/solution.h"

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kThreads = 512;
constexpr int kChannels = 3;                     // barriers per call
constexpr std::size_t kOneShotBytes = 512 << 10; // below this, latency beats bandwidth

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

// Barrier of block `blockIdx.x` with the same block on every rank. Each pair (rank, peer) owns one
// word per slot: the signaller flips it 0 -> 1, the waiter flips it back 1 -> 0, so the pad is left
// zeroed and a fast rank cannot run ahead into a word not yet consumed.
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

template <class T>
struct Pack {
    static constexpr int kElems = 16 / sizeof(T);
    float v[kElems];
    __device__ void zero() {
        for (int k = 0; k < kElems; ++k)
            v[k] = 0.f;
    }
    __device__ void add(uint4 raw) {
        const T* e = reinterpret_cast<const T*>(&raw);
        for (int k = 0; k < kElems; ++k)
            v[k] += to_float(e[k]);
    }
    __device__ uint4 pack() const {
        uint4 raw;
        T* e = reinterpret_cast<T*>(&raw);
        for (int k = 0; k < kElems; ++k)
            e[k] = from_float<T>(v[k]);
        return raw;
    }
};

// Copies elements [begin, begin + V) of src to dst when in range, element-wise at the tail.
template <class T>
__device__ void copy_pack(const T* src, T* dst, long long begin, long long count) {
    constexpr int V = 16 / sizeof(T);
    if (begin + V <= count) {
        *reinterpret_cast<uint4*>(dst + begin) = *reinterpret_cast<const uint4*>(src + begin);
    } else {
        for (long long e = begin; e < count; ++e)
            dst[e] = src[e];
    }
}

template <class T>
__device__ void sum_pack(void* const* peers, int world, long long begin, long long count, T* dst) {
    constexpr int V = 16 / sizeof(T);
    if (begin + V <= count) {
        Pack<T> acc;
        acc.zero();
        for (int r = 0; r < world; ++r)
            acc.add(__ldcg(reinterpret_cast<const uint4*>(static_cast<const T*>(peers[r]) + begin)));
        *reinterpret_cast<uint4*>(dst + begin) = acc.pack();
    } else {
        for (long long e = begin; e < count; ++e) {
            float s = 0.f;
            for (int r = 0; r < world; ++r)
                s += to_float(static_cast<const volatile T*>(peers[r])[e]);
            dst[e] = from_float<T>(s);
        }
    }
}

template <class T>
__global__ void one_shot(const T* in, T* out, long long count, void* const* peers, std::uint32_t* const* pads,
                         int rank, int world) {
    constexpr int V = 16 / sizeof(T);
    T* mine = static_cast<T*>(peers[rank]);
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x * V;
    const long long first = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
    for (long long i = first; i < count; i += stride)
        copy_pack(in, mine, i, count);
    block_barrier(pads, rank, world, 0);
    for (long long i = first; i < count; i += stride)
        sum_pack(peers, world, i, count, out);
    block_barrier(pads, rank, world, 1);
}

template <class T>
__global__ void two_shot(const T* in, T* out, long long count, long long slice, void* const* peers,
                         std::uint32_t* const* pads, int rank, int world) {
    constexpr int V = 16 / sizeof(T);
    T* mine = static_cast<T*>(peers[rank]);
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x * V;
    const long long first = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
    // Phase A: publish the input. Offsets inside a slice are the same for every slice, so block b
    // writes exactly what block b of every peer will read.
    for (int s = 0; s < world; ++s)
        for (long long j = first; j < slice; j += stride)
            copy_pack(in, mine, s * slice + j, count);
    block_barrier(pads, rank, world, 0);
    // Phase B: reduce slice `rank` in place in this rank's buffer (padding past count stays zero).
    for (long long j = first; j < slice; j += stride)
        sum_pack(peers, world, rank * slice + j, world * slice, mine);
    block_barrier(pads, rank, world, 1);
    // Phase C: gather the reduced slices.
    for (int s = 0; s < world; ++s) {
        const T* src = static_cast<const T*>(peers[s]);
        for (long long j = first; j < slice; j += stride) {
            const long long e = s * slice + j;
            if (e + V <= count) {
                *reinterpret_cast<uint4*>(out + e) = __ldcg(reinterpret_cast<const uint4*>(src + e));
            } else {
                for (long long k = e; k < count; ++k)
                    out[k] = static_cast<const volatile T*>(src)[k];
            }
        }
    }
    block_barrier(pads, rank, world, 2);
}

template <class T>
int run(const pkbw::Context& ctx) {
    constexpr int V = 16 / sizeof(T);
    const pkbw::TensorView& in = ctx.input(0);
    const long long count = in.numel();
    const int world = ctx.world_size;
    const T* src = in.as<const T>();
    T* dst = ctx.output(0).as<T>();
    if (world == 1) {
        cudaMemcpyAsync(dst, src, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
        return 0;
    }
    const long long per_rank = (count + world - 1) / world;
    const long long slice = (per_rank + V - 1) / V * V;
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("allreduce_tuned", static_cast<std::size_t>(slice * world) * sizeof(T));
    const bool small = in.nbytes() <= kOneShotBytes;
    const long long work = (small ? count : slice) / V + 1;
    long long blocks = (work + kThreads - 1) / kThreads;
    const long long max_blocks = pkbw::kSignalPadWords / (kChannels * world);
    blocks = blocks < 1 ? 1 : (blocks > max_blocks ? max_blocks : (blocks > 64 ? 64 : blocks));
    if (small) {
        one_shot<T><<<static_cast<int>(blocks), kThreads, 0, ctx.stream()>>>(
            src, dst, count, sym.peers_device, sym.signal_pads_device, ctx.rank, world);
    } else {
        two_shot<T><<<static_cast<int>(blocks), kThreads, 0, ctx.stream()>>>(
            src, dst, count, slice, sym.peers_device, sym.signal_pads_device, ctx.rank, world);
    }
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    int rc = 0;
    switch (ctx.input(0).dtype) {
    case pkbw::DType::BF16:
        rc = run<__nv_bfloat16>(ctx);
        break;
    case pkbw::DType::F16:
        rc = run<__half>(ctx);
        break;
    case pkbw::DType::F32:
        rc = run<float>(ctx);
        break;
    default:
        return ctx.fail("allreduce tuned: only bf16, f16 and f32 are supported");
    }
    const cudaError_t err = cudaGetLastError();
    return rc != 0 ? rc : (err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err)));
}
