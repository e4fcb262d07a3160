// Reference for PKB problem 63: per block, H^T P ([1, n]) and (H^T P) H through the toolkit's fp64
// GEMM (cuBLAS, 64-bit compute, PKB's association), tmp summed over the blocks in PKB's order on the
// device and ncclAllReduce'd (fp64); K = P H (toolkit GEMM); one kernel per block for w + A err K and
// (P - A K K^T) / lambda; the 8 new weight blocks ncclAllGather'd as [W, 8, n] and copied into the 8W
// output tensors.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

constexpr int kBlocks = 8;

// tmp = sum_i (lambda + s_i), left to right as PKB's Python loop.
__global__ void innovation(const double* s, double lam, double* tmp) {
    double t = 0;
    for (int i = 0; i < kBlocks; ++i)
        t = t + (lam + s[i]);
    *tmp = t;
}

// w_new = w + (A err) K and P_new = (1/lambda) (P - A (K K^T)), A = 1 / tmp (the all-reduced sum).
__global__ void update(const double* tmp, const double* err, const double* k, const double* w,
                       const double* p, double lam, long long n, double* w_new, double* p_new) {
    const double a = 1 / *tmp;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n * n; i += PKBW_GRID_STRIDE_STEP) {
        const long long r = i / n, c = i % n;
        p_new[i] = (1 / lam) * (p[i] - a * (k[r] * k[c]));
        if (i < n)
            w_new[i] = w[i] + a * *err * k[i];
    }
}

__global__ void store_scalar(double* out, double value) {
    *out = value;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    if (ctx.num_inputs != 3 * kBlocks + 1) {
        return ctx.fail("63 reference: expects H[8], error, weights[8], P[8]");
    }
    const double lam = ctx.param("kalman_lambda", 0.98);
    const double nue = ctx.param("kalman_nue", 0.9987);
    const long long n = ctx.input(0).shape[0];
    const pkbw::DType f64 = pkbw::DType::F64;
    const int world = ctx.world_size;
    cudaStream_t stream = ctx.stream();

    double* htp = static_cast<double*>(ctx.scratch("kalman_htp", kBlocks * n * sizeof(double)));
    double* s = static_cast<double*>(ctx.scratch("kalman_s", (kBlocks + 1) * sizeof(double)));
    double* tmp = s + kBlocks;
    double* k = static_cast<double*>(ctx.scratch("kalman_k", kBlocks * n * sizeof(double)));
    double* w_local = static_cast<double*>(ctx.scratch("kalman_w", kBlocks * n * sizeof(double)));
    double* w_all = static_cast<double*>(ctx.scratch("kalman_w_all", world * kBlocks * n * sizeof(double)));

    for (int i = 0; i < kBlocks; ++i) {
        const void* h = ctx.input(i).data;
        const void* p = ctx.input(2 * kBlocks + 1 + i).data;
        tk::Gemm g{};
        g.dtype = f64;
        g.m = 1;
        g.n = n;
        g.k = n;
        g.a = h; // H stored [n, 1]: op(A) = H^T
        g.trans_a = true;
        g.b = p;
        g.c = htp + i * n;
        PKBW_TRY(tk::gemm(ctx, g));                                     // H^T P
        PKBW_TRY(tk::matmul(ctx, f64, 1, 1, n, htp + i * n, h, s + i)); // (H^T P) H
        PKBW_TRY(tk::matmul(ctx, f64, n, 1, n, p, h, k + i * n));       // K = P H
    }
    innovation<<<1, 1, 0, stream>>>(s, lam, tmp);
    PKBW_CHECK(ctx, ncclAllReduce(tmp, tmp, 1, ncclFloat64, ncclSum, ctx.nccl(), stream));

    const int p_out0 = kBlocks * world;
    for (int i = 0; i < kBlocks; ++i) {
        update<<<tk::grid_for(n * n), 256, 0, stream>>>(tmp, ctx.input(kBlocks).as<double>(), k + i * n,
                                                        ctx.input(kBlocks + 1 + i).as<double>(),
                                                        ctx.input(2 * kBlocks + 1 + i).as<double>(), lam, n,
                                                        w_local + i * n, ctx.output(p_out0 + i).as<double>());
    }
    PKBW_CHECK(ctx, ncclAllGather(w_local, w_all, kBlocks * n, ncclFloat64, ctx.nccl(), stream));
    for (int j = 0; j < p_out0; ++j) {
        PKBW_CHECK(ctx, cudaMemcpyAsync(ctx.output(j).data, w_all + j * n, n * sizeof(double),
                                        cudaMemcpyDeviceToDevice, stream));
    }
    store_scalar<<<1, 1, 0, stream>>>(ctx.output(p_out0 + kBlocks).as<double>(), nue * lam + 1 - nue);
    return tk::finish(ctx);
}
