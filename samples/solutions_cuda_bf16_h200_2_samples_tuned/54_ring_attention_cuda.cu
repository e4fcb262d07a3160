// Hand-written sample candidate (not LLM output)
// PKB 54 (causal ring attention: q, k, v [B, S, H, 64] bf16 per rank; rank r's queries attend to the
// keys of ranks 0..r, its own block causally; fp32 softmax, output rounded once to bf16), tuned. Versus
// the reference (W - 1 ring steps of ncclSend/ncclRecv, one attention kernel per step with its
// log-sum-exp, a merge per step, a final rounding pass):
//  - no ring: k and v are copied into a symmetric buffer (not at W = 1, where nothing is copied) and one
//    kernel reads every needed key block in place, the rank's own block from its inputs;
//  - a warp per query row (each lane holds 2 of the 64 dimensions) with an online fp32 softmax over the
//    whole causal range, four keys per step so their loads overlap: no per-block log-sum-exp, no merge,
//    no score buffer in shared memory, one rounding at the end;
//  - the kernel starts with a device-side barrier on the signal pads (every peer's copy is done) and
//    ends with one (no peer still reads this rank's buffer, so the next call may overwrite it): no host
//    synchronisation. The grid is one block per SM so that every block is resident for the barriers.
#include "pkbw/solution.h"

#include <cmath>
#include <cstdint>
#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBlocks = 132;
constexpr int kHeadDim = 64;
constexpr int kKeysPerStep = 4;

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

__device__ float warp_sum(float v) {
    for (int step = 16; step > 0; step >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, step);
    return v;
}

struct Args {
    const bf16* q;
    const bf16* k_own;
    const bf16* v_own;
    void* const* kv; // symmetric [k | v] of every rank
    std::uint32_t* const* pads;
    bf16* out;
    long long block; // elements of one k (the offset of v in the symmetric buffer)
    int batch, seq, heads, rank, world, last, causal;
    float scale;
};

// Online softmax state of one query row: running max m, running sum l, this lane's 2 output dims.
struct RowState {
    float m = -INFINITY, l = 0.f, acc0 = 0.f, acc1 = 0.f;
};

// Adds `n` (<= kKeysPerStep) keys j0.. of one source block to the row's state.
__device__ void add_keys(RowState& st, float2 q, const bf16* k, const bf16* v, long long stride, int n,
                         float scale, int lane) {
    float s[kKeysPerStep];
    float2 vals[kKeysPerStep];
#pragma unroll
    for (int t = 0; t < kKeysPerStep; ++t) {
        if (t < n) {
            const float2 kk =
                __bfloat1622float2(reinterpret_cast<const __nv_bfloat162*>(k + t * stride)[lane]);
            vals[t] = __bfloat1622float2(reinterpret_cast<const __nv_bfloat162*>(v + t * stride)[lane]);
            s[t] = q.x * kk.x + q.y * kk.y;
        } else {
            s[t] = 0.f;
            vals[t] = make_float2(0.f, 0.f);
        }
    }
#pragma unroll
    for (int t = 0; t < kKeysPerStep; ++t)
        s[t] = warp_sum(s[t]) * scale;
    float m_new = st.m;
#pragma unroll
    for (int t = 0; t < kKeysPerStep; ++t)
        if (t < n)
            m_new = fmaxf(m_new, s[t]);
    const float correction = __expf(st.m - m_new); // 0 on the first keys (m = -inf)
    st.l *= correction;
    st.acc0 *= correction;
    st.acc1 *= correction;
#pragma unroll
    for (int t = 0; t < kKeysPerStep; ++t) {
        if (t < n) {
            const float p = __expf(s[t] - m_new);
            st.l += p;
            st.acc0 += p * vals[t].x;
            st.acc1 += p * vals[t].y;
        }
    }
    st.m = m_new;
}

__global__ void attend(Args a) {
    block_barrier(a.pads, a.rank, a.world, 0);
    const int lane = threadIdx.x % 32;
    const long long rows = static_cast<long long>(a.batch) * a.seq * a.heads;
    const long long stride = static_cast<long long>(a.heads) * kHeadDim; // between consecutive keys
    for (long long row = blockIdx.x * static_cast<long long>(kWarps) + threadIdx.x / 32; row < rows;
         row += static_cast<long long>(gridDim.x) * kWarps) {
        const int h = static_cast<int>(row % a.heads), i = static_cast<int>((row / a.heads) % a.seq);
        const long long b = row / (static_cast<long long>(a.heads) * a.seq);
        const float2 q =
            __bfloat1622float2(reinterpret_cast<const __nv_bfloat162*>(a.q + row * kHeadDim)[lane]);
        RowState st;
        for (int src = 0; src <= a.last; ++src) {
            const bf16* k = src == a.rank ? a.k_own : static_cast<const bf16*>(a.kv[src]);
            const bf16* v = src == a.rank ? a.v_own : static_cast<const bf16*>(a.kv[src]) + a.block;
            const long long first = (b * a.seq * a.heads + h) * kHeadDim;
            const int keys = (a.causal && src == a.rank) ? i + 1 : a.seq;
            for (int j = 0; j < keys; j += kKeysPerStep) {
                const int n = keys - j < kKeysPerStep ? keys - j : kKeysPerStep;
                add_keys(st, q, k + first + j * stride, v + first + j * stride, stride, n, a.scale, lane);
            }
        }
        const float inv = 1.f / st.l;
        reinterpret_cast<__nv_bfloat162*>(a.out + row * kHeadDim)[lane] =
            __floats2bfloat162_rn(st.acc0 * inv, st.acc1 * inv);
    }
    block_barrier(a.pads, a.rank, a.world, 1); // every peer has read this rank's block
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& q = ctx.input(0);
    if (q.dtype != pkbw::DType::BF16 || q.ndim != 4 || q.shape[3] != kHeadDim)
        return ctx.fail("this sample handles bf16 q, k, v [B, S, H, 64]");
    if (2 * kBlocks * ctx.world_size > pkbw::kSignalPadWords)
        return ctx.fail("this sample's device barrier handles at most 15 ranks");
    const bool causal = ctx.param("causal", 1) != 0;
    const pkbw::SymmetricMemory kv = ctx.symmetric("ring54_tuned_kv", 2 * q.nbytes());
    cudaStream_t s = ctx.stream();
    if (ctx.world_size > 1) { // only the peers read the copy
        cudaMemcpyAsync(kv.local, ctx.input(1).data, q.nbytes(), cudaMemcpyDeviceToDevice, s);
        cudaMemcpyAsync(static_cast<char*>(kv.local) + q.nbytes(), ctx.input(2).data, q.nbytes(),
                        cudaMemcpyDeviceToDevice, s);
    }
    Args a{};
    a.q = q.as<bf16>();
    a.k_own = ctx.input(1).as<bf16>();
    a.v_own = ctx.input(2).as<bf16>();
    a.kv = kv.peers_device;
    a.pads = kv.signal_pads_device;
    a.out = ctx.output(0).as<bf16>();
    a.block = q.numel();
    a.batch = static_cast<int>(q.shape[0]);
    a.seq = static_cast<int>(q.shape[1]);
    a.heads = static_cast<int>(q.shape[2]);
    a.rank = ctx.rank;
    a.world = ctx.world_size;
    a.last = causal ? ctx.rank : ctx.world_size - 1;
    a.causal = causal ? 1 : 0;
    a.scale = 1.f / std::sqrt(static_cast<float>(kHeadDim));
    attend<<<kBlocks, kThreads, 0, s>>>(a);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
