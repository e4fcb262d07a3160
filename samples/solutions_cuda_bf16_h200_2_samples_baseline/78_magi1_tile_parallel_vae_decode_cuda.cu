// Hand-written sample candidate (not LLM output)
// PKB 78 (z [1, C, T, H, W] bf16 per rank; params tile_latent_min_*, *_tile_overlap_factor, *_upsample,
// sr_ratio, first_frame_as_image): the latent is cut into overlapping tiles, dealt by size (largest
// first, stable) round-robin to the ranks. Baseline: one kernel decodes the rank's tiles from its own z
// (trilinear upsampling, align_corners = False, first 3 channels, rounded to bf16) into its slots of a
// symmetric buffer; a host barrier; one thread per video element blends the element's tile with its
// predecessors in bf16, reading the decoded tiles from their owners; a host barrier.
#include "pkbw/solution.h"

#include <algorithm>
#include <cuda_bf16.h>
#include <numeric>
#include <vector>

namespace {

using bf16 = __nv_bfloat16;

struct Axis {
    long long latent, extent, stride, up, blend, keep, tiles;
    __host__ __device__ long long start(long long i) const { return i * stride; }
    __host__ __device__ long long size(long long i) const {
        return extent < latent - start(i) ? extent : latent - start(i);
    }
    __host__ __device__ long long decoded(long long i) const { return size(i) * up; }
    __host__ __device__ long long kept(long long i) const { return keep < decoded(i) ? keep : decoded(i); }
    __host__ __device__ long long offset(long long i) const {
        long long o = 0;
        for (long long j = 0; j < i; ++j)
            o += kept(j);
        return o;
    }
};

struct Plan {
    Axis ax[3];
    long long channels, out_c;
    const long long* slot; // [tiles]: offset of each decoded tile in the symmetric buffer
    const int* owner;      // [tiles]
    const bf16* const* peers;
    __device__ long long tile(long long t, long long h, long long w) const {
        return (t * ax[1].tiles + h) * ax[2].tiles + w;
    }
    __device__ void coords(long long t, long long c[3]) const {
        c[2] = t % ax[2].tiles;
        c[1] = (t / ax[2].tiles) % ax[1].tiles;
        c[0] = t / (ax[2].tiles * ax[1].tiles);
    }
};

Axis make_axis(long long latent, long long extent, double overlap, long long up) {
    Axis a{latent, extent, static_cast<long long>(extent * (1.0 - overlap)), up, 0, 0, 0};
    a.blend = static_cast<long long>(extent * up * overlap);
    a.keep = extent * up - a.blend;
    a.tiles = a.stride > 0 ? (latent + a.stride - 1) / a.stride : 0;
    return a;
}

__device__ void source(long long o, long long up, long long n, long long& i0, long long& i1, float& l1) {
    float s = (1.f / up) * (o + 0.5f) - 0.5f;
    s = fmaxf(s, 0.f);
    i0 = static_cast<long long>(s);
    i1 = i0 < n - 1 ? i0 + 1 : i0;
    l1 = s - i0;
}

// One thread per element of the rank's decoded tiles (tiles listed in `mine`).
__global__ void decode(Plan p, const bf16* z, const long long* mine, int n_mine, long long per_tile_max,
                       bf16* out) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n_mine * per_tile_max;
         i += (long long)gridDim.x * blockDim.x) {
        const long long t = mine[i / per_tile_max], k = i % per_tile_max;
        long long c[3];
        p.coords(t, c);
        const long long dt = p.ax[0].decoded(c[0]), dh = p.ax[1].decoded(c[1]), dw = p.ax[2].decoded(c[2]);
        if (k >= p.out_c * dt * dh * dw)
            continue;
        const long long ch = k / (dt * dh * dw), a = (k / (dh * dw)) % dt, b = (k / dw) % dh, e = k % dw;
        long long t0, t1, h0, h1, w0, w1;
        float lt, lh, lw;
        source(a, p.ax[0].up, p.ax[0].size(c[0]), t0, t1, lt);
        source(b, p.ax[1].up, p.ax[1].size(c[1]), h0, h1, lh);
        source(e, p.ax[2].up, p.ax[2].size(c[2]), w0, w1, lw);
        const long long T = p.ax[0].latent, H = p.ax[1].latent, W = p.ax[2].latent;
        const bf16* vol = z + (ch % p.channels) * T * H * W;
        auto at = [&](long long x, long long y, long long q) {
            return __bfloat162float(
                vol[((p.ax[0].start(c[0]) + x) * H + p.ax[1].start(c[1]) + y) * W + p.ax[2].start(c[2]) + q]);
        };
        const float v = (1 - lt) * ((1 - lh) * ((1 - lw) * at(t0, h0, w0) + lw * at(t0, h0, w1)) +
                                    lh * ((1 - lw) * at(t0, h1, w0) + lw * at(t0, h1, w1))) +
                        lt * ((1 - lh) * ((1 - lw) * at(t1, h0, w0) + lw * at(t1, h0, w1)) +
                              lh * ((1 - lw) * at(t1, h1, w0) + lw * at(t1, h1, w1)));
        out[p.slot[t] + k] = __float2bfloat16(v);
    }
}

__device__ float decoded_at(const Plan& p, long long t, long long ch, long long a, long long b, long long e) {
    long long c[3];
    p.coords(t, c);
    const long long dt = p.ax[0].decoded(c[0]), dh = p.ax[1].decoded(c[1]), dw = p.ax[2].decoded(c[2]);
    return __bfloat162float(p.peers[p.owner[t]][p.slot[t] + ((ch * dt + a) * dh + b) * dw + e]);
}

__device__ long long locate(const Axis& ax, long long o, long long& local) {
    long long i = 0, off = 0;
    while (i + 1 < ax.tiles && o >= off + ax.kept(i))
        off += ax.kept(i++);
    local = o - off;
    return i;
}

__global__ void assemble(Plan p, bf16* video, long long ot, long long oh, long long ow) {
    const long long total = p.out_c * ot * oh * ow;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long ch = i / (ot * oh * ow);
        long long pos[3], c[3];
        c[0] = locate(p.ax[0], (i / (oh * ow)) % ot, pos[0]);
        c[1] = locate(p.ax[1], (i / ow) % oh, pos[1]);
        c[2] = locate(p.ax[2], i % ow, pos[2]);
        float v = decoded_at(p, p.tile(c[0], c[1], c[2]), ch, pos[0], pos[1], pos[2]);
        for (int axis = 0; axis < 3; ++axis) {
            if (c[axis] == 0)
                continue;
            const Axis& ax = p.ax[axis];
            long long extent = ax.blend;
            extent = ax.decoded(c[axis] - 1) < extent ? ax.decoded(c[axis] - 1) : extent;
            extent = ax.decoded(c[axis]) < extent ? ax.decoded(c[axis]) : extent;
            if (pos[axis] >= extent)
                continue;
            long long prev[3] = {c[0], c[1], c[2]}, at[3] = {pos[0], pos[1], pos[2]};
            --prev[axis];
            at[axis] = ax.decoded(prev[axis]) - extent + pos[axis];
            const double ratio = static_cast<double>(pos[axis]) / extent;
            const float from_prev = __bfloat162float(
                __float2bfloat16(decoded_at(p, p.tile(prev[0], prev[1], prev[2]), ch, at[0], at[1], at[2]) *
                                 float(1.0 - ratio)));
            const float from_cur = __bfloat162float(__float2bfloat16(v * float(ratio)));
            v = __bfloat162float(__float2bfloat16(from_prev + from_cur));
        }
        video[i] = __float2bfloat16(v);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& z = ctx.input(0);
    if (z.dtype != pkbw::DType::BF16 || ctx.output(0).dtype != pkbw::DType::BF16)
        return ctx.fail("this sample expects a bf16 latent and video");
    const long long up_s =
        static_cast<long long>(ctx.param("spatial_upsample", 8) * ctx.param("sr_ratio", 1));
    const double so = ctx.param("spatial_tile_overlap_factor", 0.25);
    Plan p{};
    p.ax[0] = make_axis(
        z.shape[2],
        static_cast<long long>(ctx.param("tile_latent_min_length", 3) + ctx.param("first_frame_as_image", 0)),
        ctx.param("temporal_tile_overlap_factor", 0.0),
        static_cast<long long>(ctx.param("temporal_upsample", 4)));
    p.ax[1] =
        make_axis(z.shape[3], static_cast<long long>(ctx.param("tile_latent_min_height", 32)), so, up_s);
    p.ax[2] = make_axis(z.shape[4], static_cast<long long>(ctx.param("tile_latent_min_width", 32)), so, up_s);
    if (p.ax[0].tiles == 0 || p.ax[1].tiles == 0 || p.ax[2].tiles == 0)
        return ctx.fail("tile overlap factors must leave a positive stride");
    p.channels = z.shape[1];
    p.out_c = ctx.output(0).shape[1];
    const long long n = p.ax[0].tiles * p.ax[1].tiles * p.ax[2].tiles;
    std::vector<long long> slot(n + 1, 0), numel(n), mine;
    long long per_tile_max = 0;
    for (long long t = 0; t < n; ++t) {
        const long long c2 = t % p.ax[2].tiles, c1 = (t / p.ax[2].tiles) % p.ax[1].tiles,
                        c0 = t / (p.ax[2].tiles * p.ax[1].tiles);
        numel[t] = p.ax[0].size(c0) * p.ax[1].size(c1) * p.ax[2].size(c2);
        const long long d = p.out_c * p.ax[0].decoded(c0) * p.ax[1].decoded(c1) * p.ax[2].decoded(c2);
        slot[t + 1] = slot[t] + d;
        per_tile_max = std::max(per_tile_max, d);
    }
    std::vector<long long> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](long long a, long long b) { return numel[a] > numel[b]; });
    std::vector<int> owner(n);
    for (long long k = 0; k < n; ++k) {
        owner[order[k]] = static_cast<int>(k % ctx.world_size);
        if (owner[order[k]] == ctx.rank)
            mine.push_back(order[k]);
    }
    const pkbw::SymmetricMemory buf = ctx.symmetric("vae78_tiles", slot[n] * sizeof(bf16));
    // Tables on the device: slots, owners, the rank's tiles, the peers' buffer pointers.
    char* tables = static_cast<char*>(ctx.scratch("vae78_tables", (2 * n + 1) * 8 + n * 4 + 64 * 8));
    long long* d_slot = reinterpret_cast<long long*>(tables);
    long long* d_mine = d_slot + n;
    const bf16** d_peers = reinterpret_cast<const bf16**>(d_mine + n + 1);
    int* d_owner = reinterpret_cast<int*>(d_peers + 64);
    std::vector<const bf16*> peers(ctx.world_size);
    for (int r = 0; r < ctx.world_size; ++r)
        peers[r] = static_cast<const bf16*>(buf.peers[r]);
    cudaMemcpyAsync(d_slot, slot.data(), n * 8, cudaMemcpyHostToDevice, ctx.stream());
    if (!mine.empty())
        cudaMemcpyAsync(d_mine, mine.data(), mine.size() * 8, cudaMemcpyHostToDevice, ctx.stream());
    cudaMemcpyAsync(d_peers, peers.data(), peers.size() * sizeof(void*), cudaMemcpyHostToDevice,
                    ctx.stream());
    cudaMemcpyAsync(d_owner, owner.data(), n * 4, cudaMemcpyHostToDevice, ctx.stream());
    p.slot = d_slot;
    p.owner = d_owner;
    p.peers = d_peers;
    if (!mine.empty())
        decode<<<4096, 256, 0, ctx.stream()>>>(p, z.as<bf16>(), d_mine, static_cast<int>(mine.size()),
                                               per_tile_max, static_cast<bf16*>(buf.local));
    ctx.barrier();
    const long long ot = p.ax[0].offset(p.ax[0].tiles), oh = p.ax[1].offset(p.ax[1].tiles),
                    ow = p.ax[2].offset(p.ax[2].tiles);
    assemble<<<4096, 256, 0, ctx.stream()>>>(p, ctx.output(0).as<bf16>(), ot, oh, ow);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
