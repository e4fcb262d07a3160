// Hand-written sample candidate (not LLM output)
// PKB 13 (GEMM, then all-reduce of the dtype-rounded products), tuned. Versus the baseline (GEMM
// into a symmetric buffer, host barrier, one-shot sum kernel, host barrier):
//  - cuBLAS (cached handle, fp32 compute, as the reference) writes the product straight into a
//    symmetric buffer, then a single all-reduce kernel over peer pointers finishes the call;
//  - device-side barriers on the signal pads (per block, self-resetting) instead of ctx.barrier(),
//    no NCCL; 16-byte vector loads, fp32 accumulation in rank order;
//  - small products: one-shot (every rank sums every peer's whole product); large ones: two-shot
//    (rank r reduces slice r in place, then every rank gathers the reduced slices), which moves
//    2(W-1)/W of the product per rank instead of W-1.
// The kernel's first barrier needs no per-block pairing: a block only signals once its rank's
// GEMM, earlier on the stream, is complete. Its last barrier keeps the next call's GEMM from
// overwriting a product a peer still reads.
#include "pkbw/solution.h"

#include <cstdint>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kThreads = 512;
constexpr int kMaxBlocks = 128;
constexpr int kChannels = 3;
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
__global__ void one_shot(T* out, long long count, void* const* peers, std::uint32_t* const* pads, int rank,
                         int world, bool vector) {
    block_barrier(pads, rank, world, 0);
    sum_elems(Sources<T>{peers, nullptr, -1, 0}, world, out, count, vector);
    block_barrier(pads, rank, world, 1);
}

// Slice-relative sums and copies: unit u of slice s belongs to the same thread for every s, so
// block b gathers exactly what block b of the slice's owner reduced before their barrier.
template <class T>
__global__ void two_shot(T* out, long long count, long long slice, void* const* peers,
                         std::uint32_t* const* pads, int rank, int world, bool vector) {
    block_barrier(pads, rank, world, 0);
    const long long off = rank * slice;
    // In place: the peers read only the other slices of this buffer.
    sum_elems(Sources<T>{peers, nullptr, -1, off}, world, static_cast<T*>(peers[rank]) + off,
              slice_len(rank, slice, count), vector);
    block_barrier(pads, rank, world, 1);
    for (int i = 0; i < world; ++i) {
        const int s = (rank + i) % world;
        copy_elems(static_cast<const T*>(peers[s]) + s * slice, out + s * slice, slice_len(s, slice, count),
                   vector);
    }
    block_barrier(pads, rank, world, 2);
}

bool cuda_type(pkbw::DType dtype, cudaDataType_t& type) {
    switch (dtype) {
    case pkbw::DType::BF16:
        type = CUDA_R_16BF;
        return true;
    case pkbw::DType::F16:
        type = CUDA_R_16F;
        return true;
    case pkbw::DType::F32:
        type = CUDA_R_32F;
        return true;
    default:
        return false;
    }
}

// One handle per process, never destroyed (a static destructor may run after the CUDA context).
cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t created = nullptr;
        cublasCreate(&created);
        return created;
    }();
    return h;
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
int run(const pkbw::Context& ctx, cudaDataType_t type) {
    constexpr int V = 16 / sizeof(T);
    const pkbw::TensorView& a = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& c = ctx.output(0);
    const int world = ctx.world_size;
    const long long m = a.shape[0], k = a.shape[1], n = b.shape[1];
    const long long count = m * n;
    const long long slice = ((count + world - 1) / world + V - 1) / V * V; // aligned slices
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("gemm_ar_tuned", static_cast<std::size_t>(slice * world) * sizeof(T));
    // Row-major C = A B is column-major C^T = B^T A^T: swap the operands, no transposes.
    const float alpha = 1.f, beta = 0.f;
    cublasSetStream(handle(), ctx.stream());
    const cublasStatus_t st = cublasGemmEx(
        handle(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
        &alpha, b.data, type, static_cast<int>(n), a.data, type, static_cast<int>(k), &beta, sym.local, type,
        static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    // Launch the all-reduce even if the GEMM failed: the peers wait for this rank's signals.
    T* out = c.as<T>();
    const bool vector = aligned(out);
    if (c.nbytes() <= kOneShotBytes) {
        one_shot<T><<<grid_for((count + V - 1) / V, world), kThreads, 0, ctx.stream()>>>(
            out, count, sym.peers_device, sym.signal_pads_device, ctx.rank, world, vector);
    } else {
        two_shot<T><<<grid_for(slice / V, world), kThreads, 0, ctx.stream()>>>(
            out, count, slice, sym.peers_device, sym.signal_pads_device, ctx.rank, world, vector);
    }
    return st == CUBLAS_STATUS_SUCCESS ? 0 : ctx.fail(cublasGetStatusString(st));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    cudaDataType_t type;
    if (!cuda_type(ctx.input(0).dtype, type)) {
        return ctx.fail("gemm-allreduce tuned: dtype must be bf16, f16 or f32");
    }
    int rc = 0;
    switch (ctx.input(0).dtype) {
    case pkbw::DType::BF16:
        rc = run<__nv_bfloat16>(ctx, type);
        break;
    case pkbw::DType::F16:
        rc = run<__half>(ctx, type);
        break;
    default:
        rc = run<float>(ctx, type);
        break;
    }
    if (rc != 0) {
        return rc;
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
