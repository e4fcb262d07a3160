// Hand-written sample candidate (not LLM output)
// PKB 43 (sharded Adam step + all-gather), tuned: one kernel. Each thread updates 8 elements (16-byte
// loads of gradient, weights and moments, torch's per-op bf16 rounding) and pushes the 16 updated
// bytes into every peer's symmetric [W P] buffer at this rank's offset. Unit u of a shard belongs to
// global thread u mod (grid × block) on every rank, so after a per-block barrier with block b of each
// peer, block b copies exactly its units of all W shards into the output; a second barrier keeps the
// next call's pushes off a buffer a peer is still reading.
#include "pkbw/solution.h"

#include <cmath>
#include <cstdint>
#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 256;
constexpr int kChannels = 2;

__device__ void block_barrier(std::uint32_t* const* pads, int rank, int world, int channel) {
    __syncthreads();
    if (threadIdx.x < world) {
        const int peer = threadIdx.x;
        const int slot = (channel * gridDim.x + blockIdx.x) * world;
        __threadfence_system();
        while (atomicCAS_system(pads[peer] + slot + rank, 0u, 1u) != 0u) {
        }
        while (atomicCAS_system(pads[rank] + slot + peer, 1u, 0u) != 1u) {
        }
        __threadfence_system();
    }
    __syncthreads();
}

struct Adam {
    float lr, beta1, beta2, eps, inv_bc1, inv_bc2;
};

__device__ float rnd(float v) {
    return __bfloat162float(__float2bfloat16(v));
}

__device__ __nv_bfloat16 update(__nv_bfloat16 g16, __nv_bfloat16 w16, __nv_bfloat16 m16, __nv_bfloat16 v16,
                                const Adam& a) {
    const float g = __bfloat162float(g16);
    const float m = rnd(rnd(__bfloat162float(m16) * a.beta1) + (1.f - a.beta1) * g);
    const float v = rnd(rnd(__bfloat162float(v16) * a.beta2) + (1.f - a.beta2) * g * g);
    const float denom = rnd(rnd(sqrtf(rnd(v * a.inv_bc2))) + a.eps);
    return __float2bfloat16(__bfloat162float(w16) + rnd(rnd(rnd(m * a.inv_bc1) / denom) * -a.lr));
}

// units: 8 bf16 per 16-byte unit; shard_units = P / 8.
__global__ void adam_all_gather(const uint4* g, const uint4* w, const uint4* m, const uint4* v, uint4* out,
                                void* const* peers, std::uint32_t* const* pads, int rank, int world,
                                long long shard_units, Adam a) {
    const long long tid = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
    const long long stride = static_cast<long long>(gridDim.x) * kThreads;
    for (long long u = tid; u < shard_units; u += stride) {
        const uint4 gv = __ldcs(g + u), wv = __ldcs(w + u), mv = __ldcs(m + u), vv = __ldcs(v + u);
        const __nv_bfloat16* gs = reinterpret_cast<const __nv_bfloat16*>(&gv);
        const __nv_bfloat16* ws = reinterpret_cast<const __nv_bfloat16*>(&wv);
        const __nv_bfloat16* ms = reinterpret_cast<const __nv_bfloat16*>(&mv);
        const __nv_bfloat16* vs = reinterpret_cast<const __nv_bfloat16*>(&vv);
        uint4 result;
        __nv_bfloat16* rs = reinterpret_cast<__nv_bfloat16*>(&result);
#pragma unroll
        for (int k = 0; k < 8; ++k)
            rs[k] = update(gs[k], ws[k], ms[k], vs[k], a);
        for (int p = 0; p < world; ++p)
            static_cast<uint4*>(peers[p])[rank * shard_units + u] = result;
    }
    block_barrier(pads, rank, world, 0);
    const uint4* gathered = static_cast<const uint4*>(peers[rank]);
    for (int s = 0; s < world; ++s)
        for (long long u = tid; u < shard_units; u += stride)
            out[s * shard_units + u] = __ldcg(gathered + s * shard_units + u);
    block_barrier(pads, rank, world, 1);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const long long p = ctx.input(0).numel();
    if (ctx.input(0).dtype != pkbw::DType::BF16 || p % 8 != 0) {
        return ctx.fail("adam tuned: bf16 and a shard size that is a multiple of 8");
    }
    const int world = ctx.world_size;
    const double beta1 = ctx.param("beta1", 0.9), beta2 = ctx.param("beta2", 0.999),
                 step = ctx.param("step", 1);
    const Adam a{static_cast<float>(ctx.param("lr", 1e-3)),
                 static_cast<float>(beta1),
                 static_cast<float>(beta2),
                 static_cast<float>(ctx.param("eps", 1e-8)),
                 static_cast<float>(1.0 / (1.0 - std::pow(beta1, step))),
                 static_cast<float>(1.0 / (1.0 - std::pow(beta2, step)))};
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("adam_tuned", static_cast<std::size_t>(p) * world * sizeof(__nv_bfloat16));
    const long long units = p / 8;
    long long blocks = (units + kThreads - 1) / kThreads;
    const long long max_blocks = pkbw::kSignalPadWords / (kChannels * world);
    blocks = blocks < 1 ? 1 : (blocks > 132 ? 132 : blocks);
    blocks = blocks > max_blocks ? max_blocks : blocks;
    adam_all_gather<<<static_cast<unsigned>(blocks), kThreads, 0, ctx.stream()>>>(
        ctx.input(0).as<const uint4>(), ctx.input(1).as<const uint4>(), ctx.input(2).as<const uint4>(),
        ctx.input(3).as<const uint4>(), ctx.output(0).as<uint4>(), sym.peers_device, sym.signal_pads_device,
        ctx.rank, world, units, a);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
