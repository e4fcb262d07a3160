// Hand-written sample candidate (not LLM output)
// PKB 72 (x1, x2, v [1, C, 2N] = this rank's zigzag chunks r and 2W-1-r of a sequence of L = 2NW samples,
// h [C, 4N], conv_bias [C]; z = x2 v; on channel shards y = irfft(rfft(z, 2L) rfft(h, 2L) / 2L)[:L]
// + z bias; out = x1 y, back on the sequence shards, transposed to [1, 2N, C]) on the host backend, fp32.
// z goes into a symmetric buffer; each rank convolves its C/W channels over the whole sequence (a direct
// circular sum in double, which is what the FFT computes) into a second symmetric buffer; each rank then
// reads its own samples of every channel from the owners.
#include "pkbw/solution.h"

#include <vector>

namespace {

// Global chunk at position p of the rank-ordered zigzag sequence (chunks 0, n-1, 1, n-2, ...), and back.
long long chunk_at(long long p, long long n) {
    return p % 2 == 0 ? p / 2 : n - 1 - p / 2;
}
long long position_of(long long chunk, long long n) {
    return chunk < (n + 1) / 2 ? 2 * chunk : 2 * (n - 1 - chunk) + 1;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32");
    }
    const int world = ctx.world_size, me = ctx.rank;
    const long long chans = ctx.input(0).shape[1], ls = ctx.input(0).shape[2], half = ls / 2,
                    taps = ctx.input(3).shape[1], local = chans / world, length = ls * world, n = 2 * length,
                    chunks = 2LL * world;
    const float *x1 = ctx.input(0).as<float>(), *x2 = ctx.input(1).as<float>(), *v = ctx.input(2).as<float>(),
                *h = ctx.input(3).as<float>(), *bias = ctx.input(4).as<float>();
    const pkbw::SymmetricMemory zs = ctx.symmetric("hyena72_z", chans * ls * sizeof(float));
    const pkbw::SymmetricMemory ys = ctx.symmetric("hyena72_y", local * length * sizeof(float));
    float* z = static_cast<float*>(zs.local);
    for (long long i = 0; i < chans * ls; ++i) {
        z[i] = x2[i] * v[i];
    }
    ctx.barrier();

    std::vector<float> u(static_cast<std::size_t>(length));
    float* y = static_cast<float*>(ys.local);
    for (long long c = 0; c < local; ++c) {
        const long long channel = me * local + c;
        for (long long g = 0; g < length; ++g) {
            const long long p = position_of(g / half, chunks);
            const float* owner = static_cast<const float*>(zs.peers[p / 2]);
            u[g] = owner[channel * ls + (p % 2) * half + g % half];
        }
        const float* hc = h + channel * taps;
        for (long long t = 0; t < length; ++t) {
            double sum = 0;
            for (long long s = 0; s < length; ++s) {
                const long long k = (t - s + n) % n; // circular: the FFT's product is a circular convolution
                if (k < taps) {
                    sum += static_cast<double>(u[s]) * hc[k];
                }
            }
            y[c * length + t] = static_cast<float>(sum + static_cast<double>(u[t]) * bias[channel]);
        }
    }
    ctx.barrier();

    float* out = ctx.output(0).as<float>();
    for (long long t = 0; t < ls; ++t) {
        const long long g = chunk_at(2LL * me + t / half, chunks) * half + t % half;
        for (long long c = 0; c < chans; ++c) {
            const float* owner = static_cast<const float*>(ys.peers[c / local]);
            out[t * chans + c] = x1[c * ls + t] * owner[(c % local) * length + g];
        }
    }
    ctx.barrier(); // peers may still read this rank's buffers
    return 0;
}
