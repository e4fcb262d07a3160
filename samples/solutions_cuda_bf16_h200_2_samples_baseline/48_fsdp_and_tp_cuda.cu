// Hand-written sample candidate (not LLM output)
// PKB 48 (SwiGLU FFN on an n_tp x n_fsdp grid: W1/W2 blocks gathered along dim 0 and W3 blocks along
// dim 1 over the FSDP group (ranks n_tp apart), y = (silu(x W1) * (x W2)) W3 summed over the TP
// group (n_tp consecutive ranks)), baseline, bf16: each rank copies its three weight blocks into a
// symmetric buffer; after a host barrier one kernel assembles the gathered weights from the FSDP
// peers' buffers, cuBLAS computes x1 = x W1 and x2 = x W2 (bf16 out, fp32 accumulation), one kernel
// z = silu(x1) * x2 with eager PyTorch's two roundings, cuBLAS the partial y = z W3 into a second
// symmetric buffer, and after another barrier a kernel sums the TP peers' partials.
// (A hand-tiled GEMM with __expf was 0.05% of elements off PKB's rule at W=1: y sums ~1000 products
// of size ~256, so where y is near zero any changed z element moves it past rtol.)
#include "pkbw/solution.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>

namespace {

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

cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t created = nullptr;
        cublasCreate(&created);
        return created;
    }();
    return h;
}

// Row-major C[m, n] = A[m, k] B[k, n] in bf16 with fp32 accumulation (column-major C^T = B^T A^T).
cublasStatus_t matmul(cudaStream_t s, const bf16* a, const bf16* b, bf16* c, int m, int n, int k) {
    const float one = 1.f, zero = 0.f;
    cublasSetStream(handle(), s);
    return cublasGemmEx(handle(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, CUDA_R_16BF, n, a, CUDA_R_16BF,
                        k, &zero, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

// z = silu(x1) * x2 in place of x1, each op's result rounded to bf16 as eager PyTorch stores it.
__global__ void silu_times(bf16* x1_to_z, const bf16* x2, long long count) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x) {
        const float a = __bfloat162float(x1_to_z[i]);
        const float silu = __bfloat162float(__float2bfloat16(a / (1.f + expf(-a))));
        x1_to_z[i] = __float2bfloat16(silu * __bfloat162float(x2[i]));
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
    bf16* z = static_cast<bf16*>(ctx.scratch("ffn48_z", 2 * b * dc * sizeof(bf16)));
    bf16* x2 = z + b * dc;
    ctx.barrier();

    Peers peers{};
    for (int p = 0; p < n_fsdp; ++p)
        peers.blocks[p] = static_cast<const bf16*>(blocks.peers[p * n_tp + tp_rank]);
    assemble<<<264, 256, 0, s>>>(peers, dr, dc, d, w, w + d * dc, w + 2 * d * dc);
    const bf16* x = ctx.input(0).as<bf16>();
    cublasStatus_t st = matmul(s, x, w, z, (int)b, (int)dc, (int)d);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = matmul(s, x, w + d * dc, x2, (int)b, (int)dc, (int)d);
    if (st != CUBLAS_STATUS_SUCCESS)
        return ctx.fail(cublasGetStatusString(st));
    silu_times<<<264, 256, 0, s>>>(z, x2, b * dc);
    st = matmul(s, z, w + 2 * d * dc, static_cast<bf16*>(partial.local), (int)b, (int)d, (int)dc);
    if (st != CUBLAS_STATUS_SUCCESS)
        return ctx.fail(cublasGetStatusString(st));
    ctx.barrier();

    Partials parts{};
    for (int t = 0; t < n_tp; ++t)
        parts.p[t] = static_cast<const bf16*>(partial.peers[fsdp_rank * n_tp + t]);
    tp_sum<<<264, 256, 0, s>>>(parts, n_tp, ctx.output(0).as<bf16>(), b * d);
    ctx.barrier(); // peers may still read this rank's buffers
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
