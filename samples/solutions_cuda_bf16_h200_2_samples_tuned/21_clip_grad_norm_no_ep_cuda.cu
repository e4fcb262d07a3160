// Hand-written sample candidate (not LLM output)
// PKB 21 (global L2 norm of three grads over all ranks, grads scaled in place by max_norm / norm
// when the norm exceeds max_norm), tuned. Versus the baseline (atomic partials, two host barriers):
//  - the sum of squares reads 16-byte vectors and writes one fp32 partial per block into this
//    rank's row of a symmetric [W, blocks] array (no atomics, no clearing between calls);
//  - the clip kernel starts with a device-side barrier on the signal pads (block b meets block b of
//    every peer; every block's partial was written by the previous kernel on the same stream, so
//    meeting after it is enough), then every block adds all W*blocks partials in one fixed order
//    (the same total on every rank), writes the norm and scales its share of the grads with
//    16-byte loads and stores; a second device barrier keeps the next call's partials from
//    overwriting ones a peer still reads. No host synchronisation at all.
#include "pkbw/solution.h"

#include <cstdint>
#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 512;
constexpr int kBlocks = 132; // one per SM: every block is resident for the device barrier

struct Grads {
    __nv_bfloat16* data[3];
    long long numel[3];
};

__device__ void block_barrier(std::uint32_t* const* pads, int rank, int world, int channel) {
    __syncthreads();
    if (threadIdx.x < world) {
        const int peer = threadIdx.x;
        const int slot = (channel * gridDim.x + blockIdx.x) * world;
        __threadfence_system();
        // Raise our flag in the peer's pad (0 -> 1), consume the peer's in ours (1 -> 0).
        while (atomicCAS_system(pads[peer] + slot + rank, 0u, 1u) != 0u) {
        }
        while (atomicCAS_system(pads[rank] + slot + peer, 1u, 0u) != 1u) {
        }
        __threadfence_system();
    }
    __syncthreads();
}

__device__ float block_sum(float s) {
    __shared__ float warps[kThreads / 32];
    for (int step = 16; step > 0; step >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, step);
    if (threadIdx.x % 32 == 0)
        warps[threadIdx.x / 32] = s;
    __syncthreads();
    float t = 0.f;
    if (threadIdx.x < 32) {
        t = threadIdx.x < kThreads / 32 ? warps[threadIdx.x] : 0.f;
        for (int step = 16; step > 0; step >>= 1)
            t += __shfl_xor_sync(0xffffffffu, t, step);
    }
    return t; // valid in thread 0
}

__global__ void partial_squares(Grads g, float* partials) {
    float s = 0.f;
    for (int k = 0; k < 3; ++k) {
        const long long vectors = g.numel[k] / 8;
        const uint4* v = reinterpret_cast<const uint4*>(g.data[k]);
        for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < vectors;
             i += static_cast<long long>(gridDim.x) * kThreads) {
            const uint4 raw = __ldg(v + i);
            const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&raw);
            for (int e = 0; e < 4; ++e) {
                const float2 f = __bfloat1622float2(p[e]);
                s += f.x * f.x + f.y * f.y;
            }
        }
        for (long long i = vectors * 8 + blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
             i < g.numel[k]; i += static_cast<long long>(gridDim.x) * kThreads) {
            const float f = __bfloat162float(g.data[k][i]);
            s += f * f;
        }
    }
    const float total = block_sum(s);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = total;
}

__global__ void clip(Grads g, void* const* partials, std::uint32_t* const* pads, int rank, int world,
                     float* norm_out, float max_norm) {
    block_barrier(pads, rank, world, 0);
    __shared__ float shared_norm;
    if (threadIdx.x < 32) {
        float t = 0.f;
        for (int r = 0; r < world; ++r) {
            const volatile float* p = static_cast<const volatile float*>(partials[r]);
            for (int b = threadIdx.x; b < kBlocks; b += 32)
                t += p[b];
        }
        for (int step = 16; step > 0; step >>= 1)
            t += __shfl_xor_sync(0xffffffffu, t, step);
        if (threadIdx.x == 0)
            shared_norm = sqrtf(t);
    }
    __syncthreads();
    const float norm = shared_norm;
    block_barrier(pads, rank, world, 1); // all partials read everywhere: the next call may write
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *norm_out = norm;
    if (!(norm > max_norm))
        return;
    const float coef = max_norm / norm;
    for (int k = 0; k < 3; ++k) {
        const long long vectors = g.numel[k] / 8;
        uint4* v = reinterpret_cast<uint4*>(g.data[k]);
        for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < vectors;
             i += static_cast<long long>(gridDim.x) * kThreads) {
            uint4 raw = v[i];
            __nv_bfloat162* p = reinterpret_cast<__nv_bfloat162*>(&raw);
            for (int e = 0; e < 4; ++e) {
                const float2 f = __bfloat1622float2(p[e]);
                p[e] = __floats2bfloat162_rn(f.x * coef, f.y * coef);
            }
            v[i] = raw;
        }
        for (long long i = vectors * 8 + blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
             i < g.numel[k]; i += static_cast<long long>(gridDim.x) * kThreads)
            g.data[k][i] = __float2bfloat16(__bfloat162float(g.data[k][i]) * coef);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.num_inputs != 3 || ctx.input(0).dtype != pkbw::DType::BF16) {
        return ctx.fail("this sample handles three bf16 grads");
    }
    Grads g;
    for (int k = 0; k < 3; ++k) {
        g.data[k] = ctx.input(k).as<__nv_bfloat16>();
        g.numel[k] = ctx.input(k).numel();
        if (reinterpret_cast<std::uintptr_t>(g.data[k]) % 16 != 0) {
            return ctx.fail("this sample needs 16-byte aligned grads");
        }
    }
    const pkbw::SymmetricMemory partials = ctx.symmetric("clip21_tuned", kBlocks * sizeof(float));
    partial_squares<<<kBlocks, kThreads, 0, ctx.stream()>>>(g, static_cast<float*>(partials.local));
    clip<<<kBlocks, kThreads, 0, ctx.stream()>>>(g, partials.peers_device, partials.signal_pads_device,
                                                 ctx.rank, ctx.world_size, ctx.output(0).as<float>(),
                                                 static_cast<float>(ctx.param("max_norm", 1.0)));
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
