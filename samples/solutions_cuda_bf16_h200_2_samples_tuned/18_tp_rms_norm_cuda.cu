// Hand-written sample candidate (not LLM output)
// PKB 18 (tensor-parallel RMSNorm: the fp32 row sums of squares are all-reduced, then every rank
// returns weight * (h * rsqrt(sum / (W*N) + eps)).to(D)), tuned. Versus the baseline (sum kernel,
// host barrier, normalise kernel, host barrier):
//  - one kernel: a warp per row computes the sum of squares with 16-byte loads and publishes it
//    in a symmetric [M] fp32 buffer; a device-side barrier on the signal pads (block b meets block
//    b of every peer, self-resetting) replaces ctx.barrier(); the same warp then adds the peers'
//    sums for its row (the "all-reduce" is M floats read over peer pointers, in rank order, so
//    every rank gets the same total) and normalises its row with 16-byte loads and stores;
//  - no NCCL; a last barrier keeps the next call from overwriting sums a peer still reads.
// Block b owns the same rows on every rank, so the per-block barrier orders exactly the sums it
// reads.
#include "pkbw/solution.h"

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxBlocks = 128; // at most one block per SM: every block is resident
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

// Sum of squares of one row, reduced across the warp (every lane returns it).
template <class T>
__device__ float row_sum_squares(const T* row, long long n, bool vector) {
    constexpr int V = 16 / sizeof(T);
    const int lane = threadIdx.x % 32;
    float s = 0.f;
    if (vector) {
        for (long long j = lane * V; j < n; j += 32 * V) {
            const uint4 raw = *reinterpret_cast<const uint4*>(row + j);
            const T* e = reinterpret_cast<const T*>(&raw);
            for (int k = 0; k < V; ++k) {
                const float v = to_float(e[k]);
                s += v * v;
            }
        }
    } else {
        for (long long j = lane; j < n; j += 32) {
            const float v = to_float(row[j]);
            s += v * v;
        }
    }
    for (int step = 16; step > 0; step >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, step);
    return s;
}

template <class T>
__device__ T scale_weight(T h, T w, float scale) {
    const T normed = from_float<T>(to_float(h) * scale); // PKB rounds to the dtype first
    return from_float<T>(to_float(w) * to_float(normed));
}

template <class T>
__device__ void normalise_row(const T* row, const T* w, T* out, long long n, float scale, bool vector) {
    constexpr int V = 16 / sizeof(T);
    const int lane = threadIdx.x % 32;
    if (vector) {
        for (long long j = lane * V; j < n; j += 32 * V) {
            const uint4 hr = *reinterpret_cast<const uint4*>(row + j);
            const uint4 wr = *reinterpret_cast<const uint4*>(w + j);
            uint4 o;
            const T* he = reinterpret_cast<const T*>(&hr);
            const T* we = reinterpret_cast<const T*>(&wr);
            T* oe = reinterpret_cast<T*>(&o);
            for (int k = 0; k < V; ++k)
                oe[k] = scale_weight(he[k], we[k], scale);
            *reinterpret_cast<uint4*>(out + j) = o;
        }
    } else {
        for (long long j = lane; j < n; j += 32)
            out[j] = scale_weight(row[j], w[j], scale);
    }
}

// Row group g (rows g*kWarps .. g*kWarps + kWarps - 1, a warp each) belongs to block g % gridDim.x.
template <class T>
__global__ void rms_norm(const T* h, const T* w, T* out, long long m, long long n, void* const* sums,
                         std::uint32_t* const* pads, int rank, int world, float inv_hidden, float eps,
                         bool vector) {
    const int warp = threadIdx.x / 32;
    float* mine = static_cast<float*>(sums[rank]);
    for (long long g = blockIdx.x; g * kWarps < m; g += gridDim.x) {
        const long long row = g * kWarps + warp;
        if (row < m) {
            const float s = row_sum_squares(h + row * n, n, vector);
            if (threadIdx.x % 32 == 0)
                mine[row] = s;
        }
    }
    block_barrier(pads, rank, world, 0);
    for (long long g = blockIdx.x; g * kWarps < m; g += gridDim.x) {
        const long long row = g * kWarps + warp;
        if (row < m) {
            float total = 0.f;
            for (int p = 0; p < world; ++p)
                total += __ldcg(static_cast<const float*>(sums[p]) + row);
            const float scale = rsqrtf(total * inv_hidden + eps);
            normalise_row(h + row * n, w, out + row * n, n, scale, vector);
        }
    }
    block_barrier(pads, rank, world, 1);
}

bool aligned(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

template <class T>
void run(const pkbw::Context& ctx) {
    constexpr int V = 16 / sizeof(T);
    const pkbw::TensorView& h = ctx.input(0);
    const int world = ctx.world_size;
    const long long m = h.shape[0], n = h.shape[1];
    const T* hd = h.as<const T>();
    const T* wd = ctx.input(1).as<const T>();
    T* out = ctx.output(0).as<T>();
    // Rows start aligned only when N is a multiple of the vector width.
    const bool vector = n % V == 0 && aligned(hd) && aligned(wd) && aligned(out);
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("rms_tuned_sums", static_cast<std::size_t>(m > 4 ? m : 4) * sizeof(float));
    long long blocks = (m + kWarps - 1) / kWarps;
    const long long pad_limit = pkbw::kSignalPadWords / (kChannels * world);
    blocks = blocks < kMaxBlocks ? blocks : kMaxBlocks;
    blocks = blocks < pad_limit ? blocks : pad_limit;
    const float inv_hidden = 1.0f / static_cast<float>(n * world);
    const float eps = static_cast<float>(ctx.param("variance_epsilon", 1e-5));
    rms_norm<T><<<static_cast<int>(blocks < 1 ? 1 : blocks), kThreads, 0, ctx.stream()>>>(
        hd, wd, out, m, n, sym.peers_device, sym.signal_pads_device, ctx.rank, world, inv_hidden, eps,
        vector);
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
        return ctx.fail("rms-norm tuned: only bf16, f16 and f32 are supported");
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
