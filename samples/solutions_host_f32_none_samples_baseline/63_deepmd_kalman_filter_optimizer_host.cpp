// Hand-written sample candidate (not LLM output)
// PKB 63 (DeePMD Kalman-filter step on 8 fp64 blocks per rank: tmp = sum(lambda + H^T P H) over all
// blocks of all ranks, A = 1/tmp, K = P H, w += A err K, P = (P - A K K^T)/lambda, every rank's new
// weights gathered, lambda_next) on the host backend. The problem is fp64 whatever the run's dtype.
// One symmetric buffer per rank holds its tmp and then its 8 new weight blocks.
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    constexpr int kBlocks = 8;
    const long long n = ctx.input(0).shape[0];
    const double lam = ctx.param("kalman_lambda", 0.98);
    const double nue = ctx.param("kalman_nue", 0.9987);
    const double err = *ctx.input(kBlocks).as<double>();
    const int world = ctx.world_size;
    const pkbw::SymmetricMemory buf = ctx.symmetric("kalman63", (1 + kBlocks * n) * sizeof(double));
    double* mine = static_cast<double*>(buf.local);

    std::vector<std::vector<double>> k(kBlocks, std::vector<double>(n));
    double tmp = 0;
    for (int i = 0; i < kBlocks; ++i) {
        const double* h = ctx.input(i).as<double>();
        const double* p = ctx.input(2 * kBlocks + 1 + i).as<double>();
        double hph = 0;
        for (long long r = 0; r < n; ++r) {
            double acc = 0;
            for (long long c = 0; c < n; ++c) {
                acc += p[r * n + c] * h[c];
            }
            k[i][r] = acc; // (P H)[r]; H^T P H = H . (P H)
            hph += h[r] * acc;
        }
        tmp += lam + hph;
    }
    mine[0] = tmp;
    ctx.barrier();
    double total = 0;
    for (int r = 0; r < world; ++r) {
        total += static_cast<const double*>(buf.peers[r])[0];
    }
    const double a = 1.0 / total;

    for (int i = 0; i < kBlocks; ++i) {
        const double* w = ctx.input(kBlocks + 1 + i).as<double>();
        const double* p = ctx.input(2 * kBlocks + 1 + i).as<double>();
        double* p_new = ctx.output(kBlocks * world + i).as<double>();
        for (long long r = 0; r < n; ++r) {
            mine[1 + i * n + r] = w[r] + a * err * k[i][r];
            for (long long c = 0; c < n; ++c) {
                p_new[r * n + c] = (p[r * n + c] - a * k[i][r] * k[i][c]) / lam;
            }
        }
    }
    ctx.barrier();
    for (int r = 0; r < world; ++r) {
        const double* peer = static_cast<const double*>(buf.peers[r]) + 1;
        for (int i = 0; i < kBlocks; ++i) {
            std::memcpy(ctx.output(r * kBlocks + i).data, peer + i * n, n * sizeof(double));
        }
    }
    *ctx.output(kBlocks * world + kBlocks).as<double>() = nue * lam + 1 - nue;
    ctx.barrier(); // peers may still read this rank's weights
    return 0;
}
