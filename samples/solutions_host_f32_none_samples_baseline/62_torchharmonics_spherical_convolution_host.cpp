// Hand-written sample candidate (not LLM output)
// PKB 62 (DISCO spherical convolution on a polar x azimuth grid: W = polar * azimuth, azimuth groups of
// consecutive ranks, polar groups ranks `azimuth` apart; x [B, C, H/polar, Wd/azimuth]; psi as coalesced
// COO psi_indices [3, nnz] (k, output latitude, local latitude * nlon_in + longitude) and psi_values;
// weight [O, C, K], bias [O]) on the host backend, fp32. Every rank publishes x in a symmetric buffer and
// reads its azimuth peers' longitude shards of its channel chunk; it contracts psi over every output
// longitude (the input rolled one step per longitude) into a second symmetric buffer; the polar sum, the
// latitude split and the exchange back are all reads of peers' buffers at once; then the channel mix.
#include "pkbw/solution.h"

#include <cstdint>
#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView &x = ctx.input(0), &idx = ctx.input(1), &val = ctx.input(2), &wt = ctx.input(3),
                           &bias = ctx.input(4);
    if (x.dtype != pkbw::DType::F32)
        return ctx.fail("this sample handles fp32");
    const int az = static_cast<int>(ctx.param("azimuth_size", 1)),
              polar = static_cast<int>(ctx.param("polar_size", 1));
    const int ar = ctx.rank % az, pr = ctx.rank / az;
    const long long nlon_in = static_cast<long long>(ctx.param("nlon_in", 0)),
                    nlon_out = static_cast<long long>(ctx.param("nlon_out", 0));
    double psi_shape[3];
    if (ctx.param_list("psi_shape", psi_shape, 3) != 3)
        return ctx.fail("no psi_shape");
    const long long B = x.shape[0], C = x.shape[1], Hl = x.shape[2], Wl = x.shape[3], Cc = C / az;
    const long long K = wt.shape[2], O = wt.shape[0], nlat_out = static_cast<long long>(psi_shape[1]);
    const long long Ho = nlat_out / polar, Wo = nlon_out / az, nnz = val.shape[0],
                    pscale = nlon_in / nlon_out;
    const long long y_count = B * Cc * K * nlat_out * nlon_out;

    const pkbw::SymmetricMemory xs = ctx.symmetric("disco62_x", x.nbytes());
    const pkbw::SymmetricMemory ys = ctx.symmetric("disco62_y", y_count * sizeof(float));
    std::memcpy(xs.local, x.data, x.nbytes());
    ctx.barrier();

    // xg [B, Cc, Hl, nlon_in]: my channel chunk, longitude s*Wl + w from azimuth peer s.
    std::vector<float> xg(B * Cc * Hl * nlon_in);
    for (int s = 0; s < az; ++s) {
        const float* px = static_cast<const float*>(xs.peers[pr * az + s]);
        for (long long b = 0; b < B; ++b)
            for (long long c = 0; c < Cc; ++c)
                for (long long l = 0; l < Hl; ++l)
                    std::memcpy(&xg[((b * Cc + c) * Hl + l) * nlon_in + s * Wl],
                                px + ((b * C + ar * Cc + c) * Hl + l) * Wl, Wl * sizeof(float));
    }

    // y [B, Cc, K, nlat_out, nlon_out] += psi value * xg rolled by p * pscale.
    float* y = static_cast<float*>(ys.local);
    std::memset(y, 0, y_count * sizeof(float));
    const std::int64_t* ix = idx.as<std::int64_t>();
    const float* v = val.as<float>();
    for (long long e = 0; e < nnz; ++e) {
        const long long k = ix[e], t = ix[nnz + e], col = ix[2 * nnz + e];
        const long long lat = col / nlon_in, lon = col % nlon_in;
        for (long long bc = 0; bc < B * Cc; ++bc) {
            const float* row = &xg[(bc * Hl + lat) * nlon_in];
            float* out = y + ((bc * K + k) * nlat_out + t) * nlon_out;
            for (long long p = 0; p < nlon_out; ++p)
                out[p] += v[e] * row[(lon + p * pscale) % nlon_in];
        }
    }
    ctx.barrier();

    // z [B, C, K, Ho, Wo]: channel chunk s from azimuth peer s, summed over that peer's polar group, my
    // latitude chunk and my longitude chunk.
    std::vector<float> z(B * C * K * Ho * Wo, 0.f);
    for (int s = 0; s < az; ++s)
        for (int q = 0; q < polar; ++q) {
            const float* py = static_cast<const float*>(ys.peers[q * az + s]);
            for (long long b = 0; b < B; ++b)
                for (long long c = 0; c < Cc; ++c)
                    for (long long k = 0; k < K; ++k)
                        for (long long h = 0; h < Ho; ++h) {
                            const float* src =
                                py + (((b * Cc + c) * K + k) * nlat_out + pr * Ho + h) * nlon_out + ar * Wo;
                            float* dst = &z[(((b * C + s * Cc + c) * K + k) * Ho + h) * Wo];
                            for (long long w = 0; w < Wo; ++w)
                                dst[w] += src[w];
                        }
        }

    const float* w = wt.as<float>();
    const float* bs = bias.as<float>();
    float* out = ctx.output(0).as<float>();
    const long long plane = Ho * Wo;
    for (long long b = 0; b < B; ++b)
        for (long long o = 0; o < O; ++o) {
            float* dst = out + (b * O + o) * plane;
            for (long long i = 0; i < plane; ++i)
                dst[i] = 0.f;
            for (long long ck = 0; ck < C * K; ++ck) {
                const float wv = w[o * C * K + ck];
                const float* src = &z[(b * C * K + ck) * plane];
                for (long long i = 0; i < plane; ++i)
                    dst[i] += wv * src[i];
            }
            for (long long i = 0; i < plane; ++i)
                dst[i] += bs[o];
        }
    ctx.barrier(); // peers may still read this rank's buffers
    return 0;
}
