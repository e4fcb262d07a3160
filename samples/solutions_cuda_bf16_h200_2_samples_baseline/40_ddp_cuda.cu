// Hand-written sample candidate (not LLM output)
// PKB 40 (DDP training step), baseline: rank 0 packs its parameters and moments into a symmetric
// buffer that every rank copies after a host barrier (the broadcast); the MLP runs on cuBLAS
// (bf16 in, fp32 accumulate; each bias added in cuBLASLt's epilogue and rounded once, as PyTorch
// does) with small kernels for ReLU and the MSE gradient; each rank's flat gradient goes into a
// symmetric buffer, and after a barrier one kernel averages the peers' gradients and applies Adam
// into the twelve outputs.
#include "pkbw/solution.h"

#include <cmath>
#include <cstdint>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>

namespace {

using bf16 = __nv_bfloat16;

cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t created = nullptr;
        cublasCreate(&created);
        return created;
    }();
    return h;
}

// PyTorch's cuBLAS workspace on compute capability 9.x (32 MiB), which its cuBLASLt calls share. cuBLAS
// picks its kernel (and so the order of each fp32 sum) from the workspace it may use, among others.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

void* workspace() {
    static void* ptr = [] {
        void* p = nullptr;
        return cudaMalloc(&p, kWorkspaceBytes) == cudaSuccess ? p : nullptr;
    }();
    return ptr;
}

bool bind(cudaStream_t s) {
    return workspace() && cublasSetStream(handle(), s) == CUBLAS_STATUS_SUCCESS &&
           cublasSetWorkspace(handle(), workspace(), kWorkspaceBytes) == CUBLAS_STATUS_SUCCESS;
}

// Row-major C[m, n] = op(A) · op(B) + beta·C; A is [m, k] ([k, m] if ta), B is [k, n] ([n, k] if tb).
bool gemm(cudaStream_t s, const bf16* a, const bf16* b, bf16* c, int m, int n, int k, bool ta, bool tb,
          float beta = 0.f) {
    const float one = 1.f;
    return bind(s) &&
           cublasGemmEx(handle(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                        &one, b, CUDA_R_16BF, tb ? k : n, a, CUDA_R_16BF, ta ? m : k, &beta, c, CUDA_R_16BF,
                        n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP) == CUBLAS_STATUS_SUCCESS;
}

// The largest power of two up to 256 dividing the address (cuBLASLt's alignment preferences).
uint32_t alignment(const void* p) {
    uint32_t a = 256;
    while (reinterpret_cast<uintptr_t>(p) % a != 0)
        a /= 2;
    return a;
}

// cuBLASLt descriptors of one call, destroyed with it.
struct LtCall {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~LtCall() {
        if (pref)
            cublasLtMatmulPreferenceDestroy(pref);
        for (cublasLtMatrixLayout_t l : {a, b, d})
            if (l)
                cublasLtMatrixLayoutDestroy(l);
        if (desc)
            cublasLtMatmulDescDestroy(desc);
    }
};

// y[rows, out] = r(x[rows, in] · W[out, in]ᵀ + bias): F.linear as PyTorch runs it, cuBLASLt with the bias
// epilogue, so the bias is added to the fp32 sum and the result rounded to bf16 once. Rounding the
// product first and adding the bias after rounds twice, which flips ReLU's mask wherever the bias
// nearly cancels the product. The same call as torch's (descriptors, workspace, alignments) gets the same
// kernel; torch's fallback when cuBLASLt declines is the bias copied into y and a GEMM with beta = 1.
__global__ void fill_bias(const bf16* bias, bf16* y, long long rows, long long n) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < rows * n)
        y[i] = bias[i % n];
}

bool linear_bias(cudaStream_t s, const bf16* x, const bf16* w, const bf16* bias, bf16* y, int rows, int out,
                 int in) {
    if (!bind(s))
        return false;
    LtCall c;
    const cublasOperation_t op_w = CUBLAS_OP_T, op_x = CUBLAS_OP_N;
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const size_t bytes = kWorkspaceBytes;
    const uint32_t align[4] = {alignment(w), alignment(x), alignment(y), alignment(bias)};
    const cublasLtMatmulPreferenceAttributes_t which[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    // Column-major D[out, rows] = Wᵀ' · x': W is stored [in, out] column-major, x [in, rows].
    bool ok =
        cublasLtMatmulDescCreate(&c.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_w, sizeof op_w) == 0 &&
        cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_x, sizeof op_x) == 0 &&
        cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue) ==
            0 &&
        cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) == 0 &&
        cublasLtMatrixLayoutCreate(&c.a, CUDA_R_16BF, in, out, in) == 0 &&
        cublasLtMatrixLayoutCreate(&c.b, CUDA_R_16BF, in, rows, in) == 0 &&
        cublasLtMatrixLayoutCreate(&c.d, CUDA_R_16BF, out, rows, out) == 0 &&
        cublasLtMatmulPreferenceCreate(&c.pref) == 0 &&
        cublasLtMatmulPreferenceSetAttribute(c.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes,
                                             sizeof bytes) == 0;
    for (int i = 0; ok && i < 4; ++i)
        ok = cublasLtMatmulPreferenceSetAttribute(c.pref, which[i], &align[i], sizeof align[i]) == 0;
    const auto lt = reinterpret_cast<cublasLtHandle_t>(handle());
    cublasLtMatmulHeuristicResult_t heuristic = {};
    int found = 0;
    ok = ok && rows > 1 && out > 1 && in > 1 &&
         cublasLtMatmulAlgoGetHeuristic(lt, c.desc, c.a, c.b, c.d, c.d, c.pref, 1, &heuristic, &found) == 0 &&
         found > 0;
    const float one = 1.f, zero = 0.f;
    if (ok && cublasLtMatmul(lt, c.desc, &one, w, c.a, x, c.b, &zero, y, c.d, y, c.d, &heuristic.algo,
                             workspace(), bytes, s) == CUBLAS_STATUS_SUCCESS)
        return true;
    fill_bias<<<static_cast<unsigned>((1LL * rows * out + 255) / 256), 256, 0, s>>>(bias, y, rows, out);
    return gemm(s, x, w, y, rows, out, in, false, true, 1.f);
}

struct Flat {
    const bf16* ptr[12]; // inputs 2..13: W1, b1, W2, b2, then m and v of each
    long long offset[4], count[4], total;
};

__global__ void pack(Flat f, bf16* state) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i >= 3 * f.total)
        return;
    const int j = static_cast<int>(i / f.total);
    const long long at = i % f.total;
    int k = 3;
    while (at < f.offset[k])
        --k;
    state[i] = f.ptr[4 * j + k][at - f.offset[k]];
}

__global__ void copy(const bf16* src, bf16* dst, long long n) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < n)
        dst[i] = src[i];
}

// x = relu(x) in place: F.relu on the linear's bf16 output.
__global__ void relu(bf16* x, long long n) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < n && !(__bfloat162float(x[i]) > 0.f))
        x[i] = __float2bfloat16(0.f);
}

// d = r(r(scale) · r(out − y)): mse_loss's backward on bf16 tensors (the scale 2/numel as a bf16 scalar,
// the difference and the product each rounded to bf16, as torch's kernel computes them).
__global__ void mse_grad(const bf16* out, const bf16* y, bf16* d, long long n, float scale) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i >= n)
        return;
    const float alpha = __bfloat162float(__float2bfloat16(scale));
    const float diff = __bfloat162float(__float2bfloat16(__bfloat162float(out[i]) - __bfloat162float(y[i])));
    d[i] = __float2bfloat16(alpha * diff);
}

__global__ void relu_grad(bf16* d, const bf16* h, long long n) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < n && __bfloat162float(h[i]) <= 0.f)
        d[i] = __float2bfloat16(0.f);
}

// out[j] = Σ_i x[i, j]
__global__ void col_sum(const bf16* x, bf16* out, long long rows, long long n) {
    const long long j = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (j >= n)
        return;
    float s = 0.f;
    for (long long i = 0; i < rows; ++i)
        s += __bfloat162float(x[i * n + j]);
    out[j] = __float2bfloat16(s);
}

struct Outputs {
    bf16* ptr[12];
};

__global__ void average_and_adam(void* const* grads, int world, const bf16* state, Flat f, Outputs o,
                                 float lr, float beta1, float beta2, float eps, float bc1, float bc2) {
    const long long at = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (at >= f.total)
        return;
    float g = 0.f;
    for (int r = 0; r < world; ++r)
        g += __bfloat162float(static_cast<const bf16*>(grads[r])[at]);
    g /= static_cast<float>(world);
    const float m = beta1 * __bfloat162float(state[f.total + at]) + (1.f - beta1) * g;
    const float v = beta2 * __bfloat162float(state[2 * f.total + at]) + (1.f - beta2) * g * g;
    const float w = __bfloat162float(state[at]) - lr * (m / bc1) / (sqrtf(v / bc2) + eps);
    int k = 3;
    while (at < f.offset[k])
        --k;
    const long long i = at - f.offset[k];
    o.ptr[k][i] = __float2bfloat16(w);
    o.ptr[4 + k][i] = __float2bfloat16(m);
    o.ptr[8 + k][i] = __float2bfloat16(v);
}

unsigned blocks(long long n) {
    return static_cast<unsigned>((n + 255) / 256);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::BF16) {
        return ctx.fail("ddp baseline: bf16 only");
    }
    const int rows = static_cast<int>(ctx.input(0).shape[0]), d_in = static_cast<int>(ctx.input(0).shape[1]);
    const int hidden = static_cast<int>(ctx.input(2).shape[0]),
              d_out = static_cast<int>(ctx.input(4).shape[0]);
    Flat f{};
    f.total = 0;
    for (int k = 0; k < 4; ++k) {
        f.offset[k] = f.total;
        f.count[k] = ctx.input(2 + k).numel();
        f.total += f.count[k];
    }
    for (int i = 0; i < 12; ++i)
        f.ptr[i] = ctx.input(2 + i).as<const bf16>();
    cudaStream_t s = ctx.stream();
    const pkbw::SymmetricMemory shared = ctx.symmetric("ddp_baseline_state", 3 * f.total * sizeof(bf16));
    const pkbw::SymmetricMemory grads = ctx.symmetric("ddp_baseline_grads", f.total * sizeof(bf16));
    bf16* state = static_cast<bf16*>(ctx.scratch("ddp_baseline_local", 3 * f.total * sizeof(bf16)));
    if (ctx.rank == 0)
        pack<<<blocks(3 * f.total), 256, 0, s>>>(f, static_cast<bf16*>(shared.local));
    ctx.barrier();
    copy<<<blocks(3 * f.total), 256, 0, s>>>(static_cast<const bf16*>(shared.peers[0]), state, 3 * f.total);

    const bf16* w1 = state + f.offset[0];
    const bf16* b1 = state + f.offset[1];
    const bf16* w2 = state + f.offset[2];
    const bf16* b2 = state + f.offset[3];
    const bf16* x = ctx.input(0).as<const bf16>();
    bf16* h = static_cast<bf16*>(ctx.scratch("ddp_baseline_h", static_cast<std::size_t>(rows) * hidden * 2));
    bf16* dh =
        static_cast<bf16*>(ctx.scratch("ddp_baseline_dh", static_cast<std::size_t>(rows) * hidden * 2));
    bf16* out =
        static_cast<bf16*>(ctx.scratch("ddp_baseline_out", static_cast<std::size_t>(rows) * d_out * 2));
    bf16* dout =
        static_cast<bf16*>(ctx.scratch("ddp_baseline_dout", static_cast<std::size_t>(rows) * d_out * 2));
    bf16* g = static_cast<bf16*>(grads.local);
    bool ok = linear_bias(s, x, w1, b1, h, rows, hidden, d_in);
    relu<<<blocks(1LL * rows * hidden), 256, 0, s>>>(h, 1LL * rows * hidden);
    ok = ok && linear_bias(s, h, w2, b2, out, rows, d_out, hidden);
    mse_grad<<<blocks(1LL * rows * d_out), 256, 0, s>>>(out, ctx.input(1).as<const bf16>(), dout,
                                                        1LL * rows * d_out,
                                                        2.f / static_cast<float>(1LL * rows * d_out));
    ok = ok && gemm(s, dout, h, g + f.offset[2], d_out, hidden, rows, true, false);
    col_sum<<<blocks(d_out), 256, 0, s>>>(dout, g + f.offset[3], rows, d_out);
    ok = ok && gemm(s, dout, w2, dh, rows, hidden, d_out, false, false);
    relu_grad<<<blocks(1LL * rows * hidden), 256, 0, s>>>(dh, h, 1LL * rows * hidden);
    ok = ok && gemm(s, dh, x, g + f.offset[0], hidden, d_in, rows, true, false);
    col_sum<<<blocks(hidden), 256, 0, s>>>(dh, g + f.offset[1], rows, hidden);
    if (!ok)
        return ctx.fail("ddp baseline: cublasGemmEx failed");
    ctx.barrier();

    Outputs o{};
    for (int i = 0; i < 12; ++i)
        o.ptr[i] = ctx.output(i).as<bf16>();
    const double beta1 = ctx.param("beta1", 0.9), beta2 = ctx.param("beta2", 0.999),
                 step = ctx.param("step", 1);
    average_and_adam<<<blocks(f.total), 256, 0, s>>>(
        grads.peers_device, ctx.world_size, state, f, o, static_cast<float>(ctx.param("lr", 1e-3)),
        static_cast<float>(beta1), static_cast<float>(beta2), static_cast<float>(ctx.param("eps", 1e-8)),
        static_cast<float>(1.0 - std::pow(beta1, step)), static_cast<float>(1.0 - std::pow(beta2, step)));
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
