// Hand-written sample candidate (not LLM output)
// PKB 48 (SwiGLU FFN on an n_tp x n_fsdp grid: W1/W2 blocks gathered along dim 0 and W3 blocks along
// dim 1 over the FSDP group (ranks n_tp apart), y = (silu(x W1) * (x W2)) W3 summed over the TP
// group (n_tp consecutive ranks)), baseline, bf16: each rank copies its three weight blocks into a
// symmetric buffer; after a host barrier one kernel assembles the gathered weights from the FSDP
// peers' buffers, two shared-memory tiled GEMM kernels (fp32 accumulation) compute z and the partial
// y into a second symmetric buffer, and after another barrier a kernel sums the TP peers' partials.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

constexpr int kTile = 16;
using bf16 = __nv_bfloat16;

struct Peers {
    const bf16* blocks[64];
};

// w1, w2: [d, dc] (row r from FSDP peer r / dr); w3: [dc, d] (column c from FSDP peer c / dr).
__global__ void assemble(Peers p, long long dr, long long dc, long long d, bf16* w1, bf16* w2, bf16* w3) {
    const long long block = dr * dc, total = d * dc;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long r = i / dc, c = i % dc; // w1/w2 element (r, c)
        const bf16* src = p.blocks[r / dr];
        w1[i] = src[(r % dr) * dc + c];
        w2[i] = src[block + (r % dr) * dc + c];
        const long long r3 = i / d, c3 = i % d; // w3 element (r3, c3)
        w3[i] = p.blocks[c3 / dr][2 * block + r3 * dr + (c3 % dr)];
    }
}

// C[m, n] = A[m, k] B[k, n]; with B2 given, C = silu(A B) * (A B2) (the first GEMM of the FFN).
__global__ void gemm(const bf16* a, const bf16* b, const bf16* b2, bf16* c, int m, int n, int k) {
    __shared__ float as[kTile][kTile], bs[kTile][kTile], bs2[kTile][kTile];
    const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
    float acc = 0.f, acc2 = 0.f;
    for (int t = 0; t < k; t += kTile) {
        const int ak = t + threadIdx.x, bk = t + threadIdx.y;
        as[threadIdx.y][threadIdx.x] = row < m && ak < k ? __bfloat162float(a[(long long)row * k + ak]) : 0.f;
        bs[threadIdx.y][threadIdx.x] = bk < k && col < n ? __bfloat162float(b[(long long)bk * n + col]) : 0.f;
        if (b2)
            bs2[threadIdx.y][threadIdx.x] =
                bk < k && col < n ? __bfloat162float(b2[(long long)bk * n + col]) : 0.f;
        __syncthreads();
        for (int q = 0; q < kTile; ++q) {
            acc += as[threadIdx.y][q] * bs[q][threadIdx.x];
            if (b2)
                acc2 += as[threadIdx.y][q] * bs2[q][threadIdx.x];
        }
        __syncthreads();
    }
    if (row >= m || col >= n)
        return;
    if (b2) {
        const float x1 = __bfloat162float(__float2bfloat16(acc));
        const float x2 = __bfloat162float(__float2bfloat16(acc2));
        const float s = __bfloat162float(__float2bfloat16(x1 / (1.f + __expf(-x1))));
        c[(long long)row * n + col] = __float2bfloat16(s * x2);
    } else {
        c[(long long)row * n + col] = __float2bfloat16(acc);
    }
}

struct Partials {
    const bf16* p[64];
};

__global__ void tp_sum(Partials parts, int n_tp, bf16* y, long long count) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x) {
        float s = 0.f;
        for (int t = 0; t < n_tp; ++t)
            s += __bfloat162float(parts.p[t][i]);
        y[i] = __float2bfloat16(s);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::BF16 || ctx.world_size > 64) {
        return ctx.fail("this sample handles bf16 and up to 64 ranks");
    }
    const int n_tp = static_cast<int>(ctx.param("n_tp", 1));
    const int tp_rank = ctx.rank % n_tp, fsdp_rank = ctx.rank / n_tp, n_fsdp = ctx.world_size / n_tp;
    const long long b = ctx.input(0).shape[0], d = ctx.input(0).shape[1];
    const long long dr = ctx.input(1).shape[0], dc = ctx.input(1).shape[1], block = dr * dc;
    const size_t bytes = block * sizeof(bf16);
    cudaStream_t s = ctx.stream();

    const pkbw::SymmetricMemory blocks = ctx.symmetric("ffn48_blocks", 3 * bytes);
    const pkbw::SymmetricMemory partial = ctx.symmetric("ffn48_partial", b * d * sizeof(bf16));
    for (int k = 0; k < 3; ++k)
        cudaMemcpyAsync(static_cast<char*>(blocks.local) + k * bytes, ctx.input(1 + k).data, bytes,
                        cudaMemcpyDeviceToDevice, s);
    bf16* w = static_cast<bf16*>(ctx.scratch("ffn48_weights", 3 * d * dc * sizeof(bf16)));
    bf16* z = static_cast<bf16*>(ctx.scratch("ffn48_z", b * dc * sizeof(bf16)));
    ctx.barrier();

    Peers peers{};
    for (int p = 0; p < n_fsdp; ++p)
        peers.blocks[p] = static_cast<const bf16*>(blocks.peers[p * n_tp + tp_rank]);
    assemble<<<264, 256, 0, s>>>(peers, dr, dc, d, w, w + d * dc, w + 2 * d * dc);
    const dim3 threads(kTile, kTile);
    gemm<<<dim3((dc + kTile - 1) / kTile, (b + kTile - 1) / kTile), threads, 0, s>>>(
        ctx.input(0).as<bf16>(), w, w + d * dc, z, (int)b, (int)dc, (int)d);
    gemm<<<dim3((d + kTile - 1) / kTile, (b + kTile - 1) / kTile), threads, 0, s>>>(
        z, w + 2 * d * dc, nullptr, static_cast<bf16*>(partial.local), (int)b, (int)d, (int)dc);
    ctx.barrier();

    Partials parts{};
    for (int t = 0; t < n_tp; ++t)
        parts.p[t] = static_cast<const bf16*>(partial.peers[fsdp_rank * n_tp + t]);
    tp_sum<<<264, 256, 0, s>>>(parts, n_tp, ctx.output(0).as<bf16>(), b * d);
    ctx.barrier(); // peers may still read this rank's buffers
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
