// Hand-written sample candidate (not LLM output)
// PKB 86 (tensor-parallel Muon orthogonalisation) on the host backend: bf16 in and out, fp32 math.
// The norm and each step's 512x512 Gram are all-reduced through per-step regions of one symmetric
// buffer (each rank sums the peers' regions after a barrier).
#include "pkbw/solution.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

float bf16_to_float(std::uint16_t b) {
    const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

std::uint16_t float_to_bf16(float f) { // round to nearest even (finite inputs)
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>(bits >> 16);
}

// C[m, n] = A[m, k] · B[k, n] (row-major), i-k-j order.
void matmul(const float* a, const float* b, float* c, long m, long n, long k) {
    std::fill(c, c + m * n, 0.f);
    for (long i = 0; i < m; ++i)
        for (long p = 0; p < k; ++p) {
            const float av = a[i * k + p];
            for (long j = 0; j < n; ++j)
                c[i * n + j] += av * b[p * n + j];
        }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    if (in.dtype != pkbw::DType::BF16) {
        return ctx.fail("host muon sample: bf16 input expected");
    }
    const long rows = in.shape[0], cols = in.shape[1];
    const int steps = static_cast<int>(ctx.param("steps", 5));
    double table[63];
    const int n = ctx.param_list("coefficients", table, 63);
    if (n < 3) {
        return ctx.fail("host muon sample: no coefficients");
    }
    const long region = rows * rows + 1;
    const pkbw::SymmetricMemory sym = ctx.symmetric("muon_host", (steps + 1) * region * sizeof(float));
    float* mine = static_cast<float*>(sym.local);
    auto reduce = [&](long offset, long count, float* out) {
        for (long i = 0; i < count; ++i) {
            float s = 0.f;
            for (int r = 0; r < ctx.world_size; ++r)
                s += static_cast<const float*>(sym.peers[r])[offset + i];
            out[i] = s;
        }
    };
    std::vector<float> x(rows * cols), xt(cols * rows), gram(rows * rows), gg(rows * rows), next(rows * cols);
    const std::uint16_t* src = in.as<const std::uint16_t>();
    float sq = 0.f;
    for (long i = 0; i < rows * cols; ++i) {
        x[i] = bf16_to_float(src[i]);
        sq += x[i] * x[i];
    }
    mine[0] = sq;
    ctx.barrier();
    float total;
    reduce(0, 1, &total);
    const float inv = 1.f / std::max(std::sqrt(total), 1e-7f);
    for (float& v : x)
        v *= inv;
    for (int step = 0; step < steps; ++step) {
        const double* abc = table + 3 * (step % (n / 3));
        for (long i = 0; i < rows; ++i)
            for (long j = 0; j < cols; ++j)
                xt[j * rows + i] = x[i * cols + j];
        float* part = mine + (step + 1) * region;
        matmul(x.data(), xt.data(), part, rows, rows, cols);
        ctx.barrier();
        reduce((step + 1) * region, rows * rows, gram.data());
        matmul(gram.data(), gram.data(), gg.data(), rows, rows, rows);
        for (long i = 0; i < rows * rows; ++i)
            gg[i] = static_cast<float>(abc[1]) * gram[i] + static_cast<float>(abc[2]) * gg[i];
        matmul(gg.data(), x.data(), next.data(), rows, cols, rows);
        for (long i = 0; i < rows * cols; ++i)
            x[i] = static_cast<float>(abc[0]) * x[i] + next[i];
    }
    std::uint16_t* out = ctx.output(0).as<std::uint16_t>();
    for (long i = 0; i < rows * cols; ++i)
        out[i] = float_to_bf16(x[i]);
    ctx.barrier();
    return 0;
}
