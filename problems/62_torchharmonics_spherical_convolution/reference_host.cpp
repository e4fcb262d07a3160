// Host oracle for PKB problem 62 (DISCO spherical convolution on a polar x azimuth grid). Every rank's x
// and psi are gathered (a few MB at PKB's shape, where the contraction outputs are 50 MB a rank), and
// this rank computes what each rank of the grid contributes to its output: rank (q, src)'s contraction
// (its channel chunk src of polar row q's whole longitude, in double, rounded to f32 as PKB stores y) at
// this rank's latitude and longitude chunk; the polar all-reduce as NCCL's fp32 sum (group order, a
// rounding after each addition); the azimuth sources' channel chunks side by side; the channel mix in
// double rounded to f32, then + bias rounded again.
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

// Every rank's inputs, as floats (x, psi values) and indices: what the oracle needs to compute any
// rank's partial contraction itself. (The host backend's group all-gather moves the whole world's data,
// so gathering every rank's y [B, C/az, K, H, Wd], 50 MB at PKB's shape, would cost W times that per rank.)
struct World {
    std::vector<float> x, values;
    std::vector<std::int64_t> indices;
};

World gather_world(const pkbw::Context& ctx, const Sizes& s, const float* x, const float* values,
                   const std::int64_t* indices) {
    const std::size_t x_count = static_cast<std::size_t>(s.batch * s.channels * s.lat_in * s.lon_in_local),
                      nnz = static_cast<std::size_t>(s.nnz), world = static_cast<std::size_t>(ctx.world_size);
    World all{std::vector<float>(x_count * world), std::vector<float>(nnz * world),
              std::vector<std::int64_t>(3 * nnz * world)};
    ctx.all_gather_host(x, x_count * sizeof(float), all.x.data());
    ctx.all_gather_host(values, nnz * sizeof(float), all.values.data());
    ctx.all_gather_host(indices, 3 * nnz * sizeof(std::int64_t), all.indices.data());
    return all;
}

// What rank (q, src) of the grid contributes to this rank's z: its y [B, C/az, K, H, nlon_out] (the
// contraction of its channel chunk src over the longitudes of polar row q, in double, rounded to f32 as
// PKB stores y) at this rank's latitude chunk and longitude chunk, [B, C/az, K, H/polar, nlon_out/az].
std::vector<double> partial_y(const Sizes& s, const World& all, int q, int src) {
    const long long sender = q * s.azimuth + src, nnz = s.nnz, pscale = s.nlon_in / s.nlon_out,
                    x_count = s.batch * s.channels * s.lat_in * s.lon_in_local;
    const std::int64_t* ix = &all.indices[static_cast<std::size_t>(3 * nnz * sender)];
    const float* values = &all.values[static_cast<std::size_t>(nnz * sender)];
    std::vector<double> part(
        static_cast<std::size_t>(s.batch * s.chan_chunk * s.kernel * s.lat_chunk * s.lon_chunk));
    for (long long e = 0; e < nnz; ++e) {
        const long long k = ix[e], h = ix[nnz + e] - s.polar_rank * s.lat_chunk, col = ix[2 * nnz + e];
        if (h < 0 || h >= s.lat_chunk)
            continue;
        const long long lat = col / s.nlon_in,
                        first = (col % s.nlon_in + s.azimuth_rank * s.lon_chunk * pscale) % s.nlon_in;
        for (long long b = 0; b < s.batch; ++b)
            for (long long c = 0; c < s.chan_chunk; ++c) {
                const long long x_row =
                    ((b * s.channels + src * s.chan_chunk + c) * s.lat_in + lat) * s.lon_in_local;
                double* out = &part[static_cast<std::size_t>(
                    (((b * s.chan_chunk + c) * s.kernel + k) * s.lat_chunk + h) * s.lon_chunk)];
                // Longitude (j + p·pscale) mod nlon_in, stepped without a division (pscale <= nlon_in);
                // longitude lon lives in grid rank (q, lon / Wl).
                long long lon = first;
                for (long long w = 0; w < s.lon_chunk; ++w) {
                    const long long holder = q * s.azimuth + lon / s.lon_in_local;
                    out[w] +=
                        values[e] *
                        all.x[static_cast<std::size_t>(holder * x_count + x_row + lon % s.lon_in_local)];
                    lon += pscale;
                    if (lon >= s.nlon_in)
                        lon -= s.nlon_in;
                }
            }
    }
    for (double& v : part)
        v = static_cast<float>(v);
    return part;
}

// z [B, C, K, H/polar, nlon_out/az]: channel chunk src is azimuth peer src's polar all-reduce (the
// polar group's partials summed in group order with a rounding to f32 after each add, NCCL's model) at
// this rank's latitude and longitude chunk.
std::vector<double> mixed_input(const Sizes& s, const World& all) {
    const long long inner = s.chan_chunk * s.kernel * s.lat_chunk * s.lon_chunk;
    std::vector<double> z(static_cast<std::size_t>(s.batch * s.azimuth * inner));
    for (int src = 0; src < s.azimuth; ++src) {
        std::vector<double> sum = partial_y(s, all, 0, src);
        for (int q = 1; q < s.polar; ++q) {
            const std::vector<double> part = partial_y(s, all, q, src);
            for (std::size_t i = 0; i < sum.size(); ++i)
                sum[i] = tk::round_to(pkbw::DType::F32, sum[i] + part[i]);
        }
        for (long long b = 0; b < s.batch; ++b)
            for (long long i = 0; i < inner; ++i)
                z[static_cast<std::size_t>((b * s.azimuth + src) * inner + i)] =
                    sum[static_cast<std::size_t>(b * inner + i)];
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

    const World all = gather_world(ctx, s, x.as<float>(), psi_values.as<float>(), indices);
    const std::vector<double> z = mixed_input(s, all);

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
