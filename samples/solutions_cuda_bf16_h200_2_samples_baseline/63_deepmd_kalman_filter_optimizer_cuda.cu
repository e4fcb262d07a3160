// Hand-written sample candidate (not LLM output)
// PKB 63 (DeePMD Kalman-filter step on 8 fp64 blocks per rank: tmp = sum(lambda + H^T P H) over all
// blocks of all ranks, A = 1/tmp, K = P H, w += A err K, P = (P - A K K^T)/lambda, every rank's new
// weights gathered, lambda_next), baseline: one block per row of P computes K = P H (a GEMV, fp64) and
// H[r] K[r]; a single block sums those into this rank's slot of a symmetric buffer; after a host
// barrier an update kernel reads every rank's slot for A and writes the new P and weights (the
// weights into the symmetric buffer); after a second barrier a copy kernel gathers the peers' weights.
#include "pkbw/solution.h"

namespace {

constexpr int kBlocks = 8;
constexpr int kThreads = 256;

struct Blocks {
    const double* h[kBlocks];
    const double* w[kBlocks];
    const double* p[kBlocks];
    double* p_new[kBlocks];
};

// grid (n, kBlocks): k[b][r] = sum_c P_b[r, c] H_b[c]; hk[b][r] = H_b[r] k[b][r].
__global__ void gain(Blocks blk, long long n, double* k, double* hk) {
    __shared__ double part[kThreads];
    const int b = blockIdx.y;
    const long long r = blockIdx.x;
    double acc = 0;
    for (long long c = threadIdx.x; c < n; c += kThreads)
        acc += blk.p[b][r * n + c] * blk.h[b][c];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        k[b * n + r] = part[0];
        hk[b * n + r] = blk.h[b][r] * part[0];
    }
}

__global__ void innovation(const double* hk, long long n, double lam, double* slot) {
    __shared__ double part[kThreads];
    double tmp = 0;
    for (int b = 0; b < kBlocks; ++b) {
        double acc = 0;
        for (long long r = threadIdx.x; r < n; r += kThreads)
            acc += hk[b * n + r];
        part[threadIdx.x] = acc;
        __syncthreads();
        for (int s = kThreads / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s)
                part[threadIdx.x] += part[threadIdx.x + s];
            __syncthreads();
        }
        tmp += lam + part[0];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *slot = tmp;
}

__global__ void update(Blocks blk, const double* k, void* const* slots, int world, const double* err,
                       double lam, long long n, double* w_new) {
    double total = 0;
    for (int r = 0; r < world; ++r)
        total += *static_cast<const volatile double*>(slots[r]);
    const double a = 1.0 / total;
    const long long count = kBlocks * n * n;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x) {
        const int b = static_cast<int>(i / (n * n));
        const long long e = i % (n * n), r = e / n, c = e % n;
        const double* kb = k + b * n;
        blk.p_new[b][e] = (blk.p[b][e] - a * kb[r] * kb[c]) / lam;
        if (e < n)
            w_new[b * n + e] = blk.w[b][e] + a * *err * kb[e];
    }
}

struct Outs {
    double* w[kBlocks * 64];
};

__global__ void gather(void* const* slots, int world, long long n, Outs outs, double* lam_out,
                       double lam_next) {
    const long long count = (long long)world * kBlocks * n;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x) {
        const long long per_rank = kBlocks * n;
        const int r = static_cast<int>(i / per_rank);
        const long long j = i % per_rank;
        outs.w[r * kBlocks + j / n][j % n] = (static_cast<const double*>(slots[r]) + 1)[j];
    }
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *lam_out = lam_next;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.num_inputs != 3 * kBlocks + 1 || ctx.world_size > 64) {
        return ctx.fail("this sample expects H[8], error, weights[8], P[8] and at most 64 ranks");
    }
    const long long n = ctx.input(0).shape[0];
    const int world = ctx.world_size;
    const double lam = ctx.param("kalman_lambda", 0.98);
    const double nue = ctx.param("kalman_nue", 0.9987);
    cudaStream_t s = ctx.stream();
    Blocks blk;
    for (int b = 0; b < kBlocks; ++b) {
        blk.h[b] = ctx.input(b).as<double>();
        blk.w[b] = ctx.input(kBlocks + 1 + b).as<double>();
        blk.p[b] = ctx.input(2 * kBlocks + 1 + b).as<double>();
        blk.p_new[b] = ctx.output(kBlocks * world + b).as<double>();
    }
    double* k = static_cast<double*>(ctx.scratch("kalman63_k", 2 * kBlocks * n * sizeof(double)));
    double* hk = k + kBlocks * n;
    const pkbw::SymmetricMemory buf = ctx.symmetric("kalman63", (1 + kBlocks * n) * sizeof(double));
    double* mine = static_cast<double*>(buf.local);

    gain<<<dim3(n, kBlocks), kThreads, 0, s>>>(blk, n, k, hk);
    innovation<<<1, kThreads, 0, s>>>(hk, n, lam, mine);
    ctx.barrier();
    update<<<1024, kThreads, 0, s>>>(blk, k, buf.peers_device, world, ctx.input(kBlocks).as<double>(), lam, n,
                                     mine + 1);
    ctx.barrier();
    Outs outs;
    for (int j = 0; j < world * kBlocks; ++j)
        outs.w[j] = ctx.output(j).as<double>();
    gather<<<64, kThreads, 0, s>>>(buf.peers_device, world, n, outs,
                                   ctx.output(kBlocks * world + kBlocks).as<double>(), nue * lam + 1 - nue);
    ctx.barrier(); // peers may still read this rank's buffer
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
