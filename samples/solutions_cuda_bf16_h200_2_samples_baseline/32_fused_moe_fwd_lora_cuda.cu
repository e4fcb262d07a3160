// Hand-written sample candidate (not LLM output)
// PKB 32 (fused MoE forward with rank-8 LoRA: router softmax + top-2, tokens to their experts' ranks,
// one SiLU-GLU MLP with LoRA per rank, weighted combine), baseline, bf16, no all-to-all: every rank
// copies its tokens into a symmetric buffer, computes its router logits (cuBLASLt, the bias in the
// epilogue) and picks each token's top-2 (softmax in fp32 summed in torch's order, rounded to bf16, the
// lower expert at a tie) into a symmetric choice array. After a host barrier each rank reads every
// peer's choices, lists the (peer, token, choice) rows routed to its experts in PyTorch's order (by
// local expert, then source rank, then token), gathers those tokens from the peers and runs its MLP on
// them as PyTorch does: every projection a cuBLAS GEMM called as torch calls it (F.linear with a bias
// through cuBLASLt's bias epilogue, so the bias is added in fp32 and rounded once; without one through
// cublasGemmEx), each torch op rounded to bf16. The rows go back into the peers' symmetric result
// slots; after a second barrier each rank combines its two result rows per token with their weights; a
// third barrier keeps the next call off buffers a peer may still read.
// Why cuBLAS and torch's row order: a GEMM's fp32 sums depend on the kernel cuBLAS picks (from the call,
// the shape, the workspace and the alignments); one dot product per thread sums in another order, and
// 32's outputs reach ~10^6, where a LoRA factor that rounds the other way moves a whole row by more than
// PKB's tolerance.
#include "pkbw/solution.h"

#include <cmath>
#include <cstdint>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <vector>

namespace {

using bf16 = __nv_bfloat16;

constexpr int kExperts = 8;
constexpr int kTopK = 2;
constexpr int kInter = 128; // PKB's intermediate width
constexpr int kRank = 8;    // LoRA rank

__device__ float bf(float v) {
    return __bfloat162float(__float2bfloat16(v));
}

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

// One thread per token: softmax of its 8 bf16 logits in fp32 (the sum in the order of torch's warp
// softmax: ((e0 + e4) + (e2 + e6)) + ((e1 + e5) + (e3 + e7))), rounded to bf16, then the top-2 (strict
// '>' keeps the lower expert at a tie).
__global__ void softmax_top2(const bf16* logits, long long m, int* chosen, float* weight) {
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (t >= m)
        return;
    float l[kExperts], p[kExperts], top = -INFINITY;
    for (int e = 0; e < kExperts; ++e) {
        l[e] = __bfloat162float(logits[t * kExperts + e]);
        top = fmaxf(top, l[e]);
    }
    for (int e = 0; e < kExperts; ++e)
        p[e] = expf(l[e] - top);
    const float sum = __fadd_rn(__fadd_rn(__fadd_rn(p[0], p[4]), __fadd_rn(p[2], p[6])),
                                __fadd_rn(__fadd_rn(p[1], p[5]), __fadd_rn(p[3], p[7])));
    int a = -1, b = -1;
    for (int e = 0; e < kExperts; ++e) {
        p[e] = bf(p[e] / sum);
        if (a < 0 || p[e] > p[a]) {
            b = a;
            a = e;
        } else if (b < 0 || p[e] > p[b]) {
            b = e;
        }
    }
    chosen[t * kTopK] = a;
    chosen[t * kTopK + 1] = b;
    weight[t * kTopK] = p[a];
    weight[t * kTopK + 1] = p[b];
}

// x[i] = the token of row i's (peer, slot): rows[i] = peer * slots + slot, slot = token * 2 + choice.
__global__ void gather(void* const* tokens, const long long* rows, long long count, long long slots,
                       long long n, bf16* x) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count * n;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long row = rows[i / n], peer = row / slots, slot = row % slots;
        x[i] = static_cast<const bf16*>(tokens[peer])[(slot / kTopK) * n + i % n];
    }
}

// Row i of y into its peer's result slot.
__global__ void scatter(const bf16* y, const long long* rows, long long count, long long slots, long long n,
                        void* const* results) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count * n;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long row = rows[i / n], peer = row / slots, slot = row % slots;
        static_cast<bf16*>(results[peer])[slot * n + i % n] = y[i];
    }
}

// a = r(a + b): torch's `+` of two bf16 tensors.
__global__ void add(bf16* a, const bf16* b, long long count) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x)
        a[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}

// gate = r(r(silu(gate)) · up): F.silu stored in bf16, then the product.
__global__ void silu_times(bf16* gate, const bf16* up, long long count) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const float g = __bfloat162float(gate[i]);
        gate[i] = __float2bfloat16(bf(g / (1.f + expf(-g))) * __bfloat162float(up[i]));
    }
}

// out[t] = bf(w0 * y0) + bf(w1 * y1), rounded: PKB's weighted rows scatter-added into zeros in bf16.
__global__ void combine(const bf16* results, const float* weight, long long m, long long n, bf16* out) {
    for (long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; idx < m * n;
         idx += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long t = idx / n, j = idx % n;
        const float a = bf(weight[t * kTopK] * __bfloat162float(results[(t * kTopK) * n + j]));
        const float b = bf(weight[t * kTopK + 1] * __bfloat162float(results[(t * kTopK + 1) * n + j]));
        out[idx] = __float2bfloat16(a + b);
    }
}

unsigned blocks(long long n) {
    return static_cast<unsigned>(n > 0 ? (n + 255) / 256 : 1);
}

struct Mlp {
    const bf16 *wg, *bg, *wu, *bu, *wd, *bd;    // nn.Linear weights [out, in] and biases
    const bf16 *ag, *bgl, *au, *bul, *ad, *bdl; // LoRA A [8, in], B [out, 8]
};

struct Buffers {
    bf16 *x, *gate, *up, *lora_a, *lora_out, *y;
};

// out = r(F.linear(x, W, b) + F.linear(F.linear(x, A), B)), each linear rounded to bf16 as torch does.
bool projection(cudaStream_t s, const bf16* x, int rows, int in, int out_features, const bf16* w,
                const bf16* b, const bf16* lora_a, const bf16* lora_b, const Buffers& buf, bf16* out) {
    bool ok = gemm(s, x, lora_a, buf.lora_a, rows, kRank, in, false, true);
    ok = ok && linear_bias(s, x, w, b, out, rows, out_features, in);
    ok = ok && gemm(s, buf.lora_a, lora_b, buf.lora_out, rows, out_features, kRank, false, true);
    const long long count = 1LL * rows * out_features;
    add<<<blocks(count), 256, 0, s>>>(out, buf.lora_out, count);
    return ok;
}

// PKB's expert_forward_lora on `rows` gathered tokens: buf.y = the MLP of buf.x.
bool expert_mlp(cudaStream_t s, const Mlp& w, const Buffers& buf, int rows, int n) {
    bool ok = projection(s, buf.x, rows, n, kInter, w.wg, w.bg, w.ag, w.bgl, buf, buf.gate);
    ok = ok && projection(s, buf.x, rows, n, kInter, w.wu, w.bu, w.au, w.bul, buf, buf.up);
    silu_times<<<blocks(1LL * rows * kInter), 256, 0, s>>>(buf.gate, buf.up, 1LL * rows * kInter);
    return ok && projection(s, buf.gate, rows, kInter, n, w.wd, w.bd, w.ad, w.bdl, buf, buf.y);
}

// This rank's rows in PyTorch's order (local expert, source rank, token), from every rank's choices.
bool list_rows(const pkbw::Context& ctx, const pkbw::SymmetricMemory& chosen, long long m,
               std::vector<long long>& rows) {
    const long long slots = m * kTopK;
    std::vector<int> all(static_cast<size_t>(ctx.world_size * slots));
    for (int r = 0; r < ctx.world_size; ++r)
        if (cudaMemcpyAsync(all.data() + r * slots, chosen.peers[r], slots * sizeof(int),
                            cudaMemcpyDeviceToHost, ctx.stream()) != cudaSuccess)
            return false;
    if (cudaStreamSynchronize(ctx.stream()) != cudaSuccess)
        return false;
    const int per_rank = kExperts / ctx.world_size;
    rows.clear();
    for (int e = ctx.rank * per_rank; e < (ctx.rank + 1) * per_rank; ++e)
        for (int r = 0; r < ctx.world_size; ++r)
            for (long long slot = 0; slot < slots; ++slot)
                if (all[r * slots + slot] == e)
                    rows.push_back(r * slots + slot);
    return true;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    if (ctx.num_inputs != 15 || x.dtype != pkbw::DType::BF16 || ctx.input(3).shape[0] != kInter ||
        ctx.input(9).shape[0] != kRank || ctx.param("num_experts", 8) != kExperts ||
        ctx.param("top_k", 2) != kTopK || kExperts % ctx.world_size != 0) {
        return ctx.fail(
            "this sample handles bf16 problem 32: 8 experts, top-2, inter 128, LoRA rank 8, W | 8");
    }
    const long long m = x.shape[0], n = x.shape[1], slots = m * kTopK, most = ctx.world_size * slots;
    auto in = [&](int i) { return ctx.input(i).as<bf16>(); };
    cudaStream_t s = ctx.stream();
    const pkbw::SymmetricMemory tokens = ctx.symmetric("moe32_b_tokens", m * n * sizeof(bf16));
    const pkbw::SymmetricMemory chosen = ctx.symmetric("moe32_b_chosen", slots * sizeof(int));
    const pkbw::SymmetricMemory results = ctx.symmetric("moe32_b_results", slots * n * sizeof(bf16));
    float* weight = static_cast<float*>(ctx.scratch("moe32_b_weight", slots * sizeof(float)));
    bf16* logits = static_cast<bf16*>(ctx.scratch("moe32_b_logits", m * kExperts * sizeof(bf16)));
    auto buffer = [&](const char* name, long long elements) {
        return static_cast<bf16*>(
            ctx.scratch(name, static_cast<size_t>(elements > 0 ? elements : 1) * sizeof(bf16)));
    };
    const long long widest = n > kInter ? n : kInter;
    const Buffers buf{buffer("moe32_b_x", most * n),
                      buffer("moe32_b_gate", most * kInter),
                      buffer("moe32_b_up", most * kInter),
                      buffer("moe32_b_lora_a", most * kRank),
                      buffer("moe32_b_lora_out", most * widest),
                      buffer("moe32_b_y", most * n)};
    long long* rows_device = static_cast<long long*>(ctx.scratch("moe32_b_rows", most * sizeof(long long)));

    cudaMemcpyAsync(tokens.local, x.data, m * n * sizeof(bf16), cudaMemcpyDeviceToDevice, s);
    if (!linear_bias(s, in(0), in(1), in(2), logits, static_cast<int>(m), kExperts, static_cast<int>(n)))
        return ctx.fail("router: cuBLAS failed");
    softmax_top2<<<blocks(m), 256, 0, s>>>(logits, m, static_cast<int*>(chosen.local), weight);
    ctx.barrier();

    std::vector<long long> rows;
    if (!list_rows(ctx, chosen, m, rows))
        return ctx.fail("could not read the peers' choices");
    const long long count = static_cast<long long>(rows.size());
    if (count > 0) {
        // From pageable memory: the copy has read `rows` when the call returns.
        cudaMemcpyAsync(rows_device, rows.data(), count * sizeof(long long), cudaMemcpyHostToDevice, s);
        gather<<<blocks(count * n), 256, 0, s>>>(tokens.peers_device, rows_device, count, slots, n, buf.x);
        const Mlp w{in(3), in(4), in(5), in(6), in(7), in(8), in(9), in(10), in(11), in(12), in(13), in(14)};
        if (!expert_mlp(s, w, buf, static_cast<int>(count), static_cast<int>(n)))
            return ctx.fail("expert MLP: cuBLAS failed");
        scatter<<<blocks(count * n), 256, 0, s>>>(buf.y, rows_device, count, slots, n, results.peers_device);
    }
    ctx.barrier();
    combine<<<264, 256, 0, s>>>(static_cast<const bf16*>(results.local), weight, m, n,
                                ctx.output(0).as<bf16>());
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
