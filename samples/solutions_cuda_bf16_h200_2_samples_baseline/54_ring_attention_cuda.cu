// Hand-written sample candidate (not LLM output)
// PKB 54 (causal ring attention: q, k, v [B, S, 8, 64] bf16 per rank; rank r's queries attend to the
// keys of ranks 0..r, its own block causally; fp32 softmax), baseline: k and v are copied into a
// symmetric buffer, a host barrier, then one thread block per query row reads the key/value blocks
// of ranks 0..r straight from the peers' buffers, keeps the row's scores in shared memory and does
// an ordinary (not merged) softmax over the whole causal range; a host barrier before the buffer is
// reused.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;

struct Peers {
    const bf16* kv[64];
};

__device__ float block_sum(float v, float* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float r = red[0];
    __syncthreads();
    return r;
}

__device__ float block_max(float v, float* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    const float r = red[0];
    __syncthreads();
    return r;
}

// Block = (b, i, h) query row; keys of ranks 0..last, S each; scores in shared memory.
__global__ void causal_rows(Peers peers, const bf16* q, bf16* out, int s_n, int h_n, int d_n, long long block,
                            int last, int rank, int causal, float scale) {
    extern __shared__ float smem[];
    __shared__ float red[128];
    float* qrow = smem;
    float* p = smem + d_n;
    const long long row = blockIdx.x; // ((b * S + i) * H + h)
    const int h = static_cast<int>(row % h_n);
    const int i = static_cast<int>((row / h_n) % s_n);
    const long long b = row / (static_cast<long long>(h_n) * s_n);
    for (int d = threadIdx.x; d < d_n; d += blockDim.x)
        qrow[d] = __bfloat162float(q[row * d_n + d]);
    __syncthreads();
    const int keys = (last + 1) * s_n;
    float m = -INFINITY;
    for (int g = threadIdx.x; g < keys; g += blockDim.x) {
        const int src = g / s_n, j = g % s_n;
        const bf16* krow = peers.kv[src] + ((b * s_n + j) * h_n + h) * d_n;
        float s = 0.f;
        for (int d = 0; d < d_n; ++d)
            s += qrow[d] * __bfloat162float(krow[d]);
        p[g] = (causal && src == rank && j > i) ? -INFINITY : s * scale;
        m = fmaxf(m, p[g]);
    }
    m = block_max(m, red);
    float sum = 0.f;
    for (int g = threadIdx.x; g < keys; g += blockDim.x) {
        p[g] = __expf(p[g] - m);
        sum += p[g];
    }
    sum = block_sum(sum, red);
    for (int d = threadIdx.x; d < d_n; d += blockDim.x) {
        float acc = 0.f;
        for (int g = 0; g < keys; ++g) {
            const int src = g / s_n, j = g % s_n;
            acc += p[g] * __bfloat162float(peers.kv[src][block + ((b * s_n + j) * h_n + h) * d_n + d]);
        }
        out[row * d_n + d] = __float2bfloat16(acc / sum);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& q = ctx.input(0);
    if (q.dtype != pkbw::DType::BF16)
        return ctx.fail("this sample handles bf16");
    const int s_n = static_cast<int>(q.shape[1]), h_n = static_cast<int>(q.shape[2]),
              d_n = static_cast<int>(q.shape[3]);
    const long long block = q.numel();
    const bool causal = ctx.param("causal", 1) != 0;
    const int last = causal ? ctx.rank : ctx.world_size - 1;
    const pkbw::SymmetricMemory kv = ctx.symmetric("ring54_kv", 2 * q.nbytes());
    cudaMemcpyAsync(kv.local, ctx.input(1).data, q.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    cudaMemcpyAsync(static_cast<char*>(kv.local) + q.nbytes(), ctx.input(2).data, q.nbytes(),
                    cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    Peers peers{};
    for (int r = 0; r < ctx.world_size; ++r)
        peers.kv[r] = static_cast<const bf16*>(kv.peers[r]);
    const size_t smem = (d_n + static_cast<size_t>(last + 1) * s_n) * sizeof(float);
    causal_rows<<<static_cast<unsigned>(block / d_n), 128, smem, ctx.stream()>>>(
        peers, q.as<bf16>(), ctx.output(0).as<bf16>(), s_n, h_n, d_n, block, last, ctx.rank, causal ? 1 : 0,
        1.f / sqrtf(static_cast<float>(d_n)));
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
