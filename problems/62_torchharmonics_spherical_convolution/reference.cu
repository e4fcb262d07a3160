// Reference for PKB problem 62 (DISCO spherical convolution on a polar x azimuth grid), fp32 throughout:
//   1. azimuth all-to-all (ctx.sub_comm_blocks(azimuth)): x's channel chunks packed per destination
//      (tk::permute), tk::all_to_all, the received longitude shards concatenated (tk::permute) into
//      xg [B, C/az, H/polar, nlon_in];
//   2. psi's row offsets (psi is coalesced: sorted by (k, t, column)) by a binary search per row;
//   3. the contraction, one thread per output: y[k, t, p] = sum over row (k, t) of psi · xg at longitude
//      (j + p·pscale) mod nlon_in (PKB's roll), written as [polar, az, B, C/az, K, H/polar, nlon_out/az]
//      so that a polar chunk is contiguous and, within it, each azimuth destination's longitudes;
//   4. ncclAllReduce of y over the polar group (ctx.sub_comm_strided(azimuth)) and this rank's latitude
//      chunk kept (PKB's all_reduce then split);
//   5. azimuth all-to-all of the longitude chunks back, the sources' channels concatenated (tk::permute);
//   6. the channel mix as one strided-batched GEMM per batch element (tk::gemm: weight [O, C·K] times
//      [C·K, H·W]), then bias added as its own op (torch's `out + bias`).
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/permute.cuh"

namespace {

namespace tk = pkbw::tk;

// row_start[r] = the first entry of psi whose row k·nlat_out + t is >= r (r = 0..rows).
__global__ void psi_row_starts(const long long* indices, long long nnz, long long nlat_out, long long rows,
                               int* row_start) {
    for (long long r = PKBW_GRID_STRIDE_BEGIN; r <= rows; r += PKBW_GRID_STRIDE_STEP) {
        long long lo = 0, hi = nnz;
        while (lo < hi) {
            const long long mid = (lo + hi) / 2;
            if (indices[mid] * nlat_out + indices[nnz + mid] < r)
                lo = mid + 1;
            else
                hi = mid;
        }
        row_start[r] = static_cast<int>(lo);
    }
}

struct ContractionShape {
    long long polar, azimuth, batch, channels, kernel, lat_chunk, lon_chunk; // output layout
    long long lat_in, nlon_in, nlat_out, pscale;
};

__global__ void disco_contraction(const float* xg, const long long* indices, const float* values,
                                  long long nnz, const int* row_start, ContractionShape s, float* y) {
    const long long total = s.polar * s.azimuth * s.batch * s.channels * s.kernel * s.lat_chunk * s.lon_chunk;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP) {
        long long rest = i;
        const long long w = rest % s.lon_chunk;
        rest /= s.lon_chunk;
        const long long h = rest % s.lat_chunk;
        rest /= s.lat_chunk;
        const long long k = rest % s.kernel;
        rest /= s.kernel;
        const long long bc = rest % (s.batch * s.channels);
        rest /= s.batch * s.channels;
        const long long a = rest % s.azimuth, p = rest / s.azimuth;
        const long long row = k * s.nlat_out + p * s.lat_chunk + h;
        const long long shift = (a * s.lon_chunk + w) * s.pscale;
        const float* plane = xg + bc * s.lat_in * s.nlon_in;
        float acc = 0.f;
        for (int e = row_start[row]; e < row_start[row + 1]; ++e) {
            const long long col = indices[2 * nnz + e];
            const long long lat = col / s.nlon_in, lon = (col % s.nlon_in + shift) % s.nlon_in;
            acc += values[e] * plane[lat * s.nlon_in + lon];
        }
        y[i] = acc;
    }
}

__global__ void add_channel_bias(float* out, const float* bias, long long total, long long channels,
                                 long long plane) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP)
        out[i] = out[i] + bias[(i / plane) % channels];
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView &x = ctx.input(0), &psi_indices = ctx.input(1), &psi_values = ctx.input(2),
                           &weight = ctx.input(3), &bias = ctx.input(4);
    const int azimuth = static_cast<int>(ctx.param("azimuth_size", 1)),
              polar = static_cast<int>(ctx.param("polar_size", 1));
    const long long nlon_in = static_cast<long long>(ctx.param("nlon_in", 0)),
                    nlon_out = static_cast<long long>(ctx.param("nlon_out", 0));
    double psi_shape[3] = {0, 0, 0};
    if (ctx.param_list("psi_shape", psi_shape, 3) != 3 || azimuth * polar != ctx.world_size ||
        static_cast<int>(ctx.param("groups", 1)) != 1 || nlon_out <= 0 || nlon_in % nlon_out != 0)
        return ctx.fail("62 reference: needs params azimuth_size * polar_size = W, groups 1, nlon_out "
                        "dividing nlon_in and psi_shape [K, nlat_out, columns]");
    const long long batch = x.shape[0], channels = x.shape[1], lat_in = x.shape[2], lon_in_local = x.shape[3],
                    chan_chunk = channels / azimuth, kernel = weight.shape[2], out_channels = weight.shape[0],
                    nlat_out = static_cast<long long>(psi_shape[1]), lat_chunk = nlat_out / polar,
                    lon_chunk = nlon_out / azimuth, nnz = psi_values.shape[0];
    if (channels % azimuth != 0 || nlat_out % polar != 0 || nlon_out % azimuth != 0 ||
        lon_in_local * azimuth != nlon_in || weight.shape[1] != channels || kernel != psi_shape[0] ||
        static_cast<long long>(psi_shape[2]) != lat_in * nlon_in)
        return ctx.fail("62 reference: x, psi and weight shapes disagree with the params");
    const int rank = ctx.rank, polar_rank = rank / azimuth;
    const long long x_count = x.numel(),
                    chunk = azimuth * batch * chan_chunk * kernel * lat_chunk * lon_chunk,
                    rows = kernel * nlat_out;
    auto* packed = static_cast<float*>(ctx.scratch("disco62_packed", x_count * sizeof(float)));
    auto* xg = static_cast<float*>(ctx.scratch("disco62_xg", x_count * sizeof(float)));
    auto* row_start = static_cast<int*>(ctx.scratch("disco62_rows", (rows + 1) * sizeof(int)));
    auto* y = static_cast<float*>(ctx.scratch("disco62_y", polar * chunk * sizeof(float)));
    auto* received = static_cast<float*>(ctx.scratch("disco62_received", chunk * sizeof(float)));
    auto* z = static_cast<float*>(ctx.scratch("disco62_z", chunk * sizeof(float)));
    if (!packed || !xg || !row_start || !y || !received || !z)
        return ctx.fail("62 reference: no scratch memory");
    cudaStream_t stream = ctx.stream();

    // 1. channels <-> longitude over the azimuth group.
    const float* gathered = x.as<float>();
    if (azimuth > 1) {
        const pkbw::SubComm az = ctx.sub_comm_blocks(azimuth);
        const long long by_chunk[] = {batch, azimuth, chan_chunk * lat_in * lon_in_local};
        const int to_destination[] = {1, 0, 2};
        PKBW_TRY(tk::permute(ctx, x.data, packed, sizeof(float), 3, by_chunk, to_destination));
        PKBW_TRY(tk::all_to_all(ctx, az.nccl(), packed, xg, x.nbytes() / azimuth));
        const long long by_source[] = {azimuth, batch * chan_chunk * lat_in, lon_in_local};
        const int longitude_last[] = {1, 0, 2};
        PKBW_TRY(tk::permute(ctx, xg, packed, sizeof(float), 3, by_source, longitude_last));
        gathered = packed;
    }

    // 2-3. the contraction over every output latitude and longitude.
    psi_row_starts<<<tk::grid_for(rows + 1), 256, 0, stream>>>(psi_indices.as<long long>(), nnz, nlat_out,
                                                               rows, row_start);
    const ContractionShape shape{polar,  azimuth, batch,    chan_chunk,        kernel, lat_chunk, lon_chunk,
                                 lat_in, nlon_in, nlat_out, nlon_in / nlon_out};
    disco_contraction<<<tk::grid_for(polar * chunk), 256, 0, stream>>>(
        gathered, psi_indices.as<long long>(), psi_values.as<float>(), nnz, row_start, shape, y);
    PKBW_CHECK(ctx, cudaGetLastError());

    // 4. the polar sum in fp32; this rank keeps its latitude chunk.
    if (polar > 1) {
        const pkbw::SubComm pol = ctx.sub_comm_strided(azimuth);
        PKBW_CHECK(ctx, ncclAllReduce(y, y, static_cast<std::size_t>(polar * chunk), ncclFloat32, ncclSum,
                                      pol.nccl(), stream));
    }
    const float* mine = y + polar_rank * chunk;

    // 5. longitude <-> channels over the azimuth group: z [B, C, K, H/polar, nlon_out/az].
    if (azimuth > 1) {
        const pkbw::SubComm az = ctx.sub_comm_blocks(azimuth);
        PKBW_TRY(tk::all_to_all(ctx, az.nccl(), mine, received, chunk / azimuth * sizeof(float)));
        const long long by_source[] = {azimuth, batch, chan_chunk * kernel * lat_chunk * lon_chunk};
        const int channels_in_order[] = {1, 0, 2};
        PKBW_TRY(tk::permute(ctx, received, z, sizeof(float), 3, by_source, channels_in_order));
        mine = z;
    }

    // 6. out[b] = weight [O, C·K] · z[b] [C·K, H·W], then + bias.
    const long long plane = lat_chunk * lon_chunk;
    tk::Gemm g;
    g.dtype = pkbw::DType::F32;
    g.m = out_channels;
    g.n = plane;
    g.k = channels * kernel;
    g.a = weight.data;
    g.b = mine;
    g.c = ctx.output(0).data;
    g.batch = batch;
    g.stride_a = 0;
    g.stride_b = channels * kernel * plane;
    g.stride_c = out_channels * plane;
    PKBW_TRY(tk::gemm(ctx, g));
    const long long total = batch * out_channels * plane;
    add_channel_bias<<<tk::grid_for(total), 256, 0, stream>>>(ctx.output(0).as<float>(), bias.as<float>(),
                                                              total, out_channels, plane);
    return tk::finish(ctx);
}
