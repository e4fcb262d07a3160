// Hand-written sample candidate (not LLM output)
// PKB 62 (DISCO spherical convolution on a polar x azimuth grid: W = polar * azimuth, azimuth groups of
// consecutive ranks, polar groups ranks `azimuth` apart; x [B, C, H/polar, Wd/azimuth] float32; psi as
// coalesced COO psi_indices [3, nnz] (k, output latitude, local latitude * nlon_in + longitude) and
// psi_values; weight [O, C, K], bias [O]), baseline: x copied into a symmetric buffer; a host barrier; one
// kernel contracts psi over every output longitude (one thread per output, its psi row found by binary
// search, the input read from the azimuth peers' shards and rolled one step per longitude) into a second
// symmetric buffer; a host barrier; one kernel sums this rank's latitude and longitude chunk over the
// polar peers, mixes the channels with weight and adds bias.
#include "pkbw/solution.h"

#include <cstdint>

namespace {

constexpr int kMaxPeers = 64;

struct Peers {
    const float* p[kMaxPeers];
};

struct Dims {
    int az, polar, ar, pr;
    long long B, C, Cc, Hl, Wl, nlon_in, K, nlat_out, nlon_out, Ho, Wo, O, nnz, pscale;
};

__device__ long long lower_bound_row(const long long* ix, long long nnz, long long nlat_out, long long row) {
    long long lo = 0, hi = nnz;
    while (lo < hi) {
        const long long mid = (lo + hi) / 2;
        if (ix[mid] * nlat_out + ix[nnz + mid] < row)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// y [B, Cc, K, nlat_out, nlon_out] of this rank (its channel chunk, the whole longitude).
__global__ void contract(Peers x, const long long* ix, const float* val, Dims d, float* y) {
    const long long total = d.B * d.Cc * d.K * d.nlat_out * d.nlon_out;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long p = i % d.nlon_out, t = (i / d.nlon_out) % d.nlat_out,
                        k = (i / (d.nlon_out * d.nlat_out)) % d.K, bc = i / (d.nlon_out * d.nlat_out * d.K),
                        b = bc / d.Cc, c = bc % d.Cc;
        const long long row = k * d.nlat_out + t;
        const long long end = lower_bound_row(ix, d.nnz, d.nlat_out, row + 1);
        float acc = 0.f;
        for (long long e = lower_bound_row(ix, d.nnz, d.nlat_out, row); e < end; ++e) {
            const long long col = ix[2 * d.nnz + e], lat = col / d.nlon_in;
            const long long lon = (col % d.nlon_in + p * d.pscale) % d.nlon_in;
            const float* shard = x.p[lon / d.Wl];
            acc += val[e] * shard[((b * d.C + d.ar * d.Cc + c) * d.Hl + lat) * d.Wl + lon % d.Wl];
        }
        y[i] = acc;
    }
}

// out [B, O, Ho, Wo] = bias + sum over (c, k) of weight * (sum over the polar peers of channel c's owner).
__global__ void mix(Peers y, const float* w, const float* bias, Dims d, float* out) {
    const long long plane = d.Ho * d.Wo, total = d.B * d.O * plane;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long col = i % d.Wo, h = (i / d.Wo) % d.Ho, o = (i / plane) % d.O, b = i / (plane * d.O);
        float acc = 0.f;
        for (long long c = 0; c < d.C; ++c) {
            const int owner = static_cast<int>(c / d.Cc);
            for (long long k = 0; k < d.K; ++k) {
                const long long at =
                    (((b * d.Cc + c % d.Cc) * d.K + k) * d.nlat_out + d.pr * d.Ho + h) * d.nlon_out +
                    d.ar * d.Wo + col;
                float z = 0.f;
                for (int q = 0; q < d.polar; ++q)
                    z += y.p[q * d.az + owner][at];
                acc += w[(o * d.C + c) * d.K + k] * z;
            }
        }
        out[i] = acc + bias[o];
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView &x = ctx.input(0), &idx = ctx.input(1), &val = ctx.input(2), &wt = ctx.input(3),
                           &bias = ctx.input(4);
    if (x.dtype != pkbw::DType::F32 || ctx.world_size > kMaxPeers)
        return ctx.fail("this sample handles float32 and up to 64 ranks");
    double psi_shape[3];
    if (ctx.param_list("psi_shape", psi_shape, 3) != 3)
        return ctx.fail("no psi_shape");
    Dims d{};
    d.az = static_cast<int>(ctx.param("azimuth_size", 1));
    d.polar = static_cast<int>(ctx.param("polar_size", 1));
    d.ar = ctx.rank % d.az;
    d.pr = ctx.rank / d.az;
    d.B = x.shape[0], d.C = x.shape[1], d.Hl = x.shape[2], d.Wl = x.shape[3], d.Cc = d.C / d.az;
    d.nlon_in = static_cast<long long>(ctx.param("nlon_in", 0));
    d.nlon_out = static_cast<long long>(ctx.param("nlon_out", 0));
    d.K = wt.shape[2], d.O = wt.shape[0], d.nlat_out = static_cast<long long>(psi_shape[1]);
    d.Ho = d.nlat_out / d.polar, d.Wo = d.nlon_out / d.az, d.nnz = val.shape[0],
    d.pscale = d.nlon_in / d.nlon_out;
    const long long y_count = d.B * d.Cc * d.K * d.nlat_out * d.nlon_out;

    const pkbw::SymmetricMemory xs = ctx.symmetric("disco62_x", x.nbytes());
    const pkbw::SymmetricMemory ys = ctx.symmetric("disco62_y", y_count * sizeof(float));
    cudaStream_t s = ctx.stream();
    cudaMemcpyAsync(xs.local, x.data, x.nbytes(), cudaMemcpyDeviceToDevice, s);
    ctx.barrier();

    Peers xp{}, yp{};
    for (int r = 0; r < d.az; ++r)
        xp.p[r] = static_cast<const float*>(xs.peers[d.pr * d.az + r]);
    for (int r = 0; r < ctx.world_size; ++r)
        yp.p[r] = static_cast<const float*>(ys.peers[r]);
    const int threads = 256;
    auto blocks = [&](long long n) {
        return static_cast<unsigned>(n / threads + 1 < 8192 ? n / threads + 1 : 8192);
    };
    contract<<<blocks(y_count), threads, 0, s>>>(xp, idx.as<long long>(), val.as<float>(), d,
                                                 static_cast<float*>(ys.local));
    ctx.barrier();
    const long long out_count = ctx.output(0).numel();
    mix<<<blocks(out_count), threads, 0, s>>>(yp, wt.as<float>(), bias.as<float>(), d,
                                              ctx.output(0).as<float>());
    ctx.barrier(); // peers may still read this rank's buffers
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
