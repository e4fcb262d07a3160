// Hand-written sample candidate (not LLM output)
// PKB 82 (vocab-parallel log-probs with top-k/top-p), baseline: each rank copies its bf16 vocabulary
// slice into a symmetric buffer; after a host barrier one block per local token reads the token's full
// row of 256 from the peers, sorts it (bitonic on (value, index)), applies top-k then top-p (softmax
// rounded to bf16, running fp32 sum rounded to bf16), takes the target's fp32 log-softmax and publishes
// it; after a second barrier every rank copies all the ranks' log-probs into its output.
#include "pkbw/solution.h"

#include <cstdint>
#include <cuda_bf16.h>

namespace {

constexpr int kRow = 256; // PKB's vocabulary

__device__ float round_bf16(float v) {
    return __bfloat162float(__float2bfloat16(v));
}

__device__ float block_sum(float v, float* part) {
    part[threadIdx.x] = v;
    __syncthreads();
    for (int step = kRow / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            part[threadIdx.x] += part[threadIdx.x + step];
        __syncthreads();
    }
    const float total = part[0];
    __syncthreads();
    return total;
}

__global__ void log_prob_rows(void* const* shards, int world, long long lv, long long lt, int rank,
                              const std::int64_t* target, int top_k, bool need_p, float bound, float* out) {
    __shared__ float key[kRow];
    __shared__ int index[kRow];
    __shared__ float scratch[kRow];
    __shared__ float prefix[kRow];
    const int t = threadIdx.x;
    const long long token = rank * lt + blockIdx.x;
    const int owner = static_cast<int>(t / lv);
    key[t] = __bfloat162float(static_cast<const __nv_bfloat16*>(shards[owner])[token * lv + t % lv]);
    index[t] = t;
    __syncthreads();
    for (int size = 2; size <= kRow; size <<= 1) {
        for (int stride = size / 2; stride > 0; stride >>= 1) {
            const int partner = t ^ stride;
            if (partner > t) {
                const bool after =
                    key[t] > key[partner] || (key[t] == key[partner] && index[t] > index[partner]);
                if (after == ((t & size) == 0)) {
                    const float kv = key[t];
                    key[t] = key[partner];
                    key[partner] = kv;
                    const int iv = index[t];
                    index[t] = index[partner];
                    index[partner] = iv;
                }
            }
            __syncthreads();
        }
    }
    const float value = key[t];
    bool keep = true;
    if (top_k > 0)
        keep = value >= key[kRow - min(top_k, kRow)];
    const float top = key[kRow - 1];
    if (need_p) {
        const float e = keep ? expf(value - top) : 0.f;
        prefix[t] = round_bf16(e / block_sum(e, scratch));
        __syncthreads();
        if (t == 0) {
            float running = 0.f;
            for (int s = 0; s < kRow; ++s) {
                running += prefix[s];
                prefix[s] = round_bf16(running);
            }
        }
        __syncthreads();
        keep = keep && (t == kRow - 1 || prefix[t] > bound);
    }
    const float sum = block_sum(keep ? expf(value - top) : 0.f, scratch);
    if (index[t] == target[token])
        out[blockIdx.x] = keep ? value - top - logf(sum) : -INFINITY;
}

__global__ void gather(void* const* results, int world, long long lt, float* out) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < world * lt)
        out[i] = static_cast<const float*>(results[i / lt])[i % lt];
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const long long lv = in.shape[in.ndim - 1];
    const long long tokens = in.numel() / lv;
    if (in.dtype != pkbw::DType::BF16 || lv * ctx.world_size != kRow) {
        return ctx.fail("top-k log-prob baseline: bf16 and a vocabulary of 256 only");
    }
    const long long lt = tokens / ctx.world_size;
    const pkbw::SymmetricMemory shards = ctx.symmetric("vlp_base_logits", in.nbytes());
    const pkbw::SymmetricMemory results = ctx.symmetric("vlp_base_logp", lt * sizeof(float));
    cudaMemcpyAsync(shards.local, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    log_prob_rows<<<static_cast<unsigned>(lt), kRow, 0, ctx.stream()>>>(
        shards.peers_device, ctx.world_size, lv, lt, ctx.rank, ctx.input(1).as<const std::int64_t>(),
        static_cast<int>(ctx.param("top_k", 0)), ctx.param("top_p", 1.0) < 1.0,
        static_cast<float>(1.0 - ctx.param("top_p", 1.0)), static_cast<float*>(results.local));
    ctx.barrier();
    gather<<<static_cast<unsigned>((tokens + 255) / 256), 256, 0, ctx.stream()>>>(
        results.peers_device, ctx.world_size, lt, ctx.output(0).as<float>());
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
