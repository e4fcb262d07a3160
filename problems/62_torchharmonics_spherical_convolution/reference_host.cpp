// Host oracle for PKB problem 62 (DISCO spherical convolution on a polar x azimuth grid): the azimuth
// group's x gathered (this rank's channel chunk of every longitude shard), the contraction in double
// rounded to f32 (PKB stores y), the polar all-reduce as NCCL's fp32 sum (rank order, a rounding after
// each addition), this rank's latitude chunk, the azimuth group's longitude chunks gathered back (every
// source's channels), the channel mix in double rounded to f32, then + bias rounded again.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <cstdint>
#include <vector>

namespace {

namespace tk = pkbw::tk;

struct Sizes {
    int azimuth, polar, azimuth_rank, polar_rank;
    long long batch, channels, chan_chunk, lat_in, lon_in_local, nlon_in, kernel, nlat_out, lat_chunk,
        nlon_out, lon_chunk, out_channels, nnz;
};

// Every az peer's x [B, C, Hl, Wl] gathered; xg [B, C/az, Hl, nlon_in] = this rank's channel chunk with
// longitude s·Wl + w from peer s.
std::vector<double> gather_longitudes(const pkbw::Context& ctx, const Sizes& s,
                                      const std::vector<double>& x) {
    if (s.azimuth == 1)
        return x;
    const std::vector<double> all = tk::all_gather_f64(ctx, ctx.sub_comm_blocks(s.azimuth), x);
    std::vector<double> xg(x.size());
    const long long rows = s.batch * s.chan_chunk * s.lat_in;
    for (long long r = 0; r < rows; ++r) {
        const long long b = r / (s.chan_chunk * s.lat_in), c = (r / s.lat_in) % s.chan_chunk,
                        l = r % s.lat_in;
        const long long from_row = (b * s.channels + s.azimuth_rank * s.chan_chunk + c) * s.lat_in + l;
        for (long long src = 0; src < s.azimuth; ++src)
            for (long long w = 0; w < s.lon_in_local; ++w)
                xg[static_cast<std::size_t>(r * s.nlon_in + src * s.lon_in_local + w)] =
                    all[static_cast<std::size_t>(src * static_cast<long long>(x.size()) +
                                                 from_row * s.lon_in_local + w)];
    }
    return xg;
}

// y [B, C/az, K, nlat_out, nlon_out] = psi's rows times xg rolled by p·pscale longitudes, rounded to f32.
std::vector<float> contract(const Sizes& s, const std::vector<double>& xg, const std::int64_t* indices,
                            const float* values) {
    const long long pscale = s.nlon_in / s.nlon_out, planes = s.batch * s.chan_chunk;
    std::vector<double> acc(static_cast<std::size_t>(planes * s.kernel * s.nlat_out * s.nlon_out), 0.0);
    for (long long e = 0; e < s.nnz; ++e) {
        const long long k = indices[e], t = indices[s.nnz + e], col = indices[2 * s.nnz + e];
        const long long lat = col / s.nlon_in, lon = col % s.nlon_in;
        const double v = values[e];
        for (long long bc = 0; bc < planes; ++bc) {
            const double* row = &xg[static_cast<std::size_t>((bc * s.lat_in + lat) * s.nlon_in)];
            double* out = &acc[static_cast<std::size_t>(((bc * s.kernel + k) * s.nlat_out + t) * s.nlon_out)];
            for (long long p = 0; p < s.nlon_out; ++p)
                out[p] += v * row[(lon + p * pscale) % s.nlon_in];
        }
    }
    return std::vector<float>(acc.begin(), acc.end());
}

// This rank's latitude chunk of the polar sum, [B, C/az, K, H/polar, nlon_out].
std::vector<double> polar_sum(const pkbw::Context& ctx, const Sizes& s, const std::vector<float>& y) {
    const long long outer = s.batch * s.chan_chunk * s.kernel, plane = s.lat_chunk * s.nlon_out;
    std::vector<float> all = y;
    if (s.polar > 1) {
        all.resize(y.size() * static_cast<std::size_t>(s.polar));
        ctx.all_gather_host(ctx.sub_comm_strided(s.azimuth), y.data(), y.size() * sizeof(float), all.data());
    }
    std::vector<double> mine(static_cast<std::size_t>(outer * plane));
    for (long long o = 0; o < outer; ++o)
        for (long long i = 0; i < plane; ++i) {
            const std::size_t at =
                static_cast<std::size_t>(o * s.nlat_out * s.nlon_out + s.polar_rank * plane + i);
            double sum = all[at];
            for (int q = 1; q < s.polar; ++q)
                sum = tk::round_to(pkbw::DType::F32, sum + all[q * y.size() + at]);
            mine[static_cast<std::size_t>(o * plane + i)] = sum;
        }
    return mine;
}

// z [B, C, K, H/polar, nlon_out/az]: channel chunk src from az peer src, this rank's longitude chunk.
std::vector<double> gather_channels(const pkbw::Context& ctx, const Sizes& s,
                                    const std::vector<double>& part) {
    const long long rows = s.batch * s.chan_chunk * s.kernel * s.lat_chunk;
    std::vector<double> all = part;
    if (s.azimuth > 1)
        all = tk::all_gather_f64(ctx, ctx.sub_comm_blocks(s.azimuth), part);
    std::vector<double> z(
        static_cast<std::size_t>(s.batch * s.channels * s.kernel * s.lat_chunk * s.lon_chunk));
    for (long long src = 0; src < s.azimuth; ++src)
        for (long long r = 0; r < rows; ++r) {
            const long long b = r / (s.chan_chunk * s.kernel * s.lat_chunk),
                            rest = r % (s.chan_chunk * s.kernel * s.lat_chunk);
            const long long to_row = (b * s.channels + src * s.chan_chunk) * s.kernel * s.lat_chunk + rest;
            for (long long w = 0; w < s.lon_chunk; ++w)
                z[static_cast<std::size_t>(to_row * s.lon_chunk + w)] =
                    all[static_cast<std::size_t>(src * static_cast<long long>(part.size()) + r * s.nlon_out +
                                                 s.azimuth_rank * s.lon_chunk + w)];
        }
    return z;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView &x = ctx.input(0), &psi_indices = ctx.input(1), &psi_values = ctx.input(2),
                           &weight = ctx.input(3), &bias = ctx.input(4);
    Sizes s{};
    s.azimuth = static_cast<int>(ctx.param("azimuth_size", 1));
    s.polar = static_cast<int>(ctx.param("polar_size", 1));
    s.azimuth_rank = ctx.rank % s.azimuth;
    s.polar_rank = ctx.rank / s.azimuth;
    s.nlon_in = static_cast<long long>(ctx.param("nlon_in", 0));
    s.nlon_out = static_cast<long long>(ctx.param("nlon_out", 0));
    double psi_shape[3] = {0, 0, 0};
    if (ctx.param_list("psi_shape", psi_shape, 3) != 3 || s.azimuth * s.polar != ctx.world_size ||
        static_cast<int>(ctx.param("groups", 1)) != 1 || s.nlon_out <= 0 || s.nlon_in % s.nlon_out != 0)
        return ctx.fail("62 oracle: needs params azimuth_size * polar_size = W, groups 1, nlon_out dividing "
                        "nlon_in and psi_shape [K, nlat_out, columns]");
    s.batch = x.shape[0];
    s.channels = x.shape[1];
    s.chan_chunk = s.channels / s.azimuth;
    s.lat_in = x.shape[2];
    s.lon_in_local = x.shape[3];
    s.kernel = weight.shape[2];
    s.out_channels = weight.shape[0];
    s.nlat_out = static_cast<long long>(psi_shape[1]);
    s.lat_chunk = s.nlat_out / s.polar;
    s.lon_chunk = s.nlon_out / s.azimuth;
    s.nnz = psi_values.shape[0];
    if (s.channels % s.azimuth != 0 || s.nlat_out % s.polar != 0 || s.nlon_out % s.azimuth != 0 ||
        s.lon_in_local * s.azimuth != s.nlon_in || weight.shape[1] != s.channels ||
        s.kernel != psi_shape[0] || static_cast<long long>(psi_shape[2]) != s.lat_in * s.nlon_in)
        return ctx.fail("62 oracle: x, psi and weight shapes disagree with the params");
    const std::int64_t* indices = psi_indices.as<std::int64_t>();
    for (long long e = 0; e < s.nnz; ++e)
        if (indices[e] < 0 || indices[e] >= s.kernel || indices[s.nnz + e] < 0 ||
            indices[s.nnz + e] >= s.nlat_out || indices[2 * s.nnz + e] < 0 ||
            indices[2 * s.nnz + e] >= s.lat_in * s.nlon_in)
            return ctx.fail("62 oracle: a psi index is outside psi_shape");

    const std::vector<double> xg = gather_longitudes(ctx, s, tk::to_f64(x));
    const std::vector<float> y = contract(s, xg, indices, psi_values.as<float>());
    const std::vector<double> z = gather_channels(ctx, s, polar_sum(ctx, s, y));

    const std::vector<double> w = tk::to_f64(weight), b = tk::to_f64(bias);
    const long long plane = s.lat_chunk * s.lon_chunk, mix = s.channels * s.kernel;
    std::vector<double> out(static_cast<std::size_t>(s.batch * s.out_channels * plane));
    for (long long bi = 0; bi < s.batch; ++bi)
        for (long long o = 0; o < s.out_channels; ++o)
            for (long long i = 0; i < plane; ++i) {
                double sum = 0;
                for (long long ck = 0; ck < mix; ++ck)
                    sum += w[static_cast<std::size_t>(o * mix + ck)] *
                           z[static_cast<std::size_t>((bi * mix + ck) * plane + i)];
                const double mixed = tk::round_to(pkbw::DType::F32, sum);
                out[static_cast<std::size_t>((bi * s.out_channels + o) * plane + i)] =
                    tk::round_to(pkbw::DType::F32, mixed + b[static_cast<std::size_t>(o)]);
            }
    tk::store_all(ctx.output(0), out);
    return 0;
}
