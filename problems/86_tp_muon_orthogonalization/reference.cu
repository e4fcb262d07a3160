// Reference for PKB problem 86 on the toolkit: bf16 -> fp32, tk::sum_of_squares + ncclAllReduce for
// the Frobenius norm, a scaling kernel, then per Newton-Schulz step three fp32 tk::gemm calls (the
// toolkit's handle never uses TF32, as PKB's fp32 matmuls must not): the Gram X·Xᵀ (all-reduced),
// update = b·A + c·A·A (beta = b on a copy of A) and X' = a·X + update·X (beta = a on a copy of X);
// finally fp32 -> bf16.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cuda_bf16.h>

namespace tk = pkbw::tk;

namespace {

__global__ void to_f32(const __nv_bfloat16* in, float* out, long long n) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP)
        out[i] = __bfloat162float(in[i]);
}

// x /= max(sqrt(*norm_sq), eps)
__global__ void normalise(float* x, long long n, const float* norm_sq) {
    const float scale = fmaxf(sqrtf(*norm_sq), 1e-7f);
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP)
        x[i] = x[i] / scale;
}

__global__ void to_bf16(const float* in, __nv_bfloat16* out, long long n) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP)
        out[i] = __float2bfloat16(in[i]);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    if (in.dtype != pkbw::DType::BF16) {
        return ctx.fail("86 reference: x must be bf16");
    }
    const long long rows = in.shape[0], cols = in.shape[1], n = rows * cols;
    const int steps = static_cast<int>(ctx.param("steps", 5));
    double table[63];
    const int count = ctx.param_list("coefficients", table, 63);
    if (count < 3 || count % 3 != 0) {
        return ctx.fail("86 reference: list param coefficients must hold (a, b, c) triples");
    }
    cudaStream_t s = ctx.stream();
    float* x = static_cast<float*>(ctx.scratch("muon_x", n * sizeof(float)));
    float* next = static_cast<float*>(ctx.scratch("muon_next", n * sizeof(float)));
    float* gram = static_cast<float*>(ctx.scratch("muon_gram", rows * rows * sizeof(float)));
    float* update = static_cast<float*>(ctx.scratch("muon_update", rows * rows * sizeof(float)));
    float* norm_sq = static_cast<float*>(ctx.scratch("muon_norm", sizeof(float)));
    to_f32<<<tk::grid_for(n), 256, 0, s>>>(in.as<const __nv_bfloat16>(), x, n);
    const tk::TensorSpan span{x, pkbw::DType::F32, n};
    PKBW_TRY(tk::sum_of_squares(ctx, &span, 1, norm_sq));
    PKBW_CHECK(ctx, ncclAllReduce(norm_sq, norm_sq, 1, ncclFloat32, ncclSum, ctx.nccl(), s));
    normalise<<<tk::grid_for(n), 256, 0, s>>>(x, n, norm_sq);
    for (int step = 0; step < steps; ++step) {
        const double* abc = table + 3 * (step % (count / 3));
        // gram[rows, rows] = x · xᵀ (F.linear's product without a bias)
        PKBW_TRY(tk::linear(ctx, pkbw::DType::F32, rows, cols, rows, x, x, nullptr, gram));
        PKBW_CHECK(ctx, ncclAllReduce(gram, gram, rows * rows, ncclFloat32, ncclSum, ctx.nccl(), s));
        PKBW_CHECK(ctx,
                   cudaMemcpyAsync(update, gram, rows * rows * sizeof(float), cudaMemcpyDeviceToDevice, s));
        // update = c · gram · gram + b · gram (torch.addmm(gram, gram, gram, alpha=c, beta=b))
        PKBW_TRY(tk::addmm(ctx, pkbw::DType::F32, rows, rows, rows, gram, gram, abc[2], abc[1], update));
        PKBW_CHECK(ctx, cudaMemcpyAsync(next, x, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
        // next = update · x + a · x (torch.addmm(x, update, x, alpha=1, beta=a))
        PKBW_TRY(tk::addmm(ctx, pkbw::DType::F32, rows, cols, rows, update, x, 1.0, abc[0], next));
        float* t = x;
        x = next;
        next = t;
    }
    to_bf16<<<tk::grid_for(n), 256, 0, s>>>(x, ctx.output(0).as<__nv_bfloat16>(), n);
    return tk::finish(ctx);
}
