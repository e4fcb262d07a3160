// Hand-written sample candidate (not LLM output)
// PKB 61 (gsplat projection: every rank's gaussians projected to every rank's camera in bf16 op by op,
// the visible pairs sent to the camera's owner), baseline: each rank puts n and its camera in the head
// of a symmetric buffer, host barrier, reads every head; a kernel projects every (camera, gaussian) pair
// (fp32 per op, rounded to bf16 as torch stores each op's result) into a record with a visibility flag;
// the flags come to the host for the packing positions, a kernel packs the visible records by owner
// into the symmetric buffer after the per-owner counts, host barrier, one device-to-device copy per peer
// of its chunk for this rank, a kernel unpacks the eight outputs, K reported, a last host barrier.
#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <vector>

namespace {

struct Camera {
    float view[16], k[9];
};
struct CameraTerms {
    float view[16], k[9], lim_xp, lim_xn, lim_yp, lim_yn;
};
struct Record {
    long long camera, gaussian;
    int radius[2];
    float values[10]; // means2d 2, depth, conics 3, opacity, colors 3
};
struct Settings {
    float width, height, eps, near_plane, far_plane;
};

__host__ __device__ float r(float v) {
    return __bfloat162float(__float2bfloat16_rn(v));
}
__device__ float in(const void* t, long long i) {
    return __bfloat162float(static_cast<const __nv_bfloat16*>(t)[i]);
}
__device__ float dot3(const float* a, const float* b) {
    return r(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
}
__device__ float dot3_col(const float* a, const float* b, int k) {
    return r(a[0] * b[k] + a[1] * b[3 + k] + a[2] * b[6 + k]);
}

__device__ void covariance(const float* q, const float* s, float* cov) {
    const float norm = r(sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]));
    const float w = r(q[0] / norm), x = r(q[1] / norm), y = r(q[2] / norm), z = r(q[3] / norm);
    const float xx = r(x * x), yy = r(y * y), zz = r(z * z), xy = r(x * y), xz = r(x * z), yz = r(y * z);
    const float wx = r(w * x), wy = r(w * y), wz = r(w * z);
    const float rot[9] = {r(1 - r(2 * r(yy + zz))), r(2 * r(xy - wz)),        r(2 * r(xz + wy)),
                          r(2 * r(xy + wz)),        r(1 - r(2 * r(xx + zz))), r(2 * r(yz - wx)),
                          r(2 * r(xz - wy)),        r(2 * r(yz + wx)),        r(1 - r(2 * r(xx + yy)))};
    float m[9];
    for (int i = 0; i < 9; ++i)
        m[i] = r(rot[i] * s[i % 3]);
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k)
            cov[i * 3 + k] = dot3(m + i * 3, m + k * 3);
}

// Pair t = camera * n + gaussian.
__global__ void project(const void* means, const void* quats, const void* scales, const void* opacities,
                        const void* colors, long long n, long long pairs, const CameraTerms* cams,
                        const long long* first_gaussian, Settings st, Record* records, int* flags) {
    for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < pairs;
         t += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long c = t / n, i = t % n;
        const CameraTerms& cam = cams[c];
        float q[4], s[3], mean[3], cov[9];
        for (int j = 0; j < 4; ++j)
            q[j] = in(quats, i * 4 + j);
        for (int j = 0; j < 3; ++j) {
            s[j] = in(scales, i * 3 + j);
            mean[j] = in(means, i * 3 + j);
        }
        covariance(q, s, cov);
        float rot[9], mc[3], tm[9], cc[9];
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                rot[a * 3 + b] = cam.view[a * 4 + b];
        for (int a = 0; a < 3; ++a)
            mc[a] = r(dot3(rot + a * 3, mean) + cam.view[a * 4 + 3]);
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                tm[a * 3 + b] = dot3_col(rot + a * 3, cov, b);
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                cc[a * 3 + b] = dot3(tm + a * 3, rot + b * 3);
        const float fx = cam.k[0], fy = cam.k[4], tz = mc[2], tz2 = r(tz * tz);
        const float tx = r(tz * fminf(fmaxf(r(mc[0] / tz), -cam.lim_xn), cam.lim_xp));
        const float ty = r(tz * fminf(fmaxf(r(mc[1] / tz), -cam.lim_yn), cam.lim_yp));
        const float jac[6] = {r(fx / tz), 0.0f, r(r(-fx * tx) / tz2), 0.0f, r(fy / tz), r(r(-fy * ty) / tz2)};
        float jt[6], c2[4];
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 3; ++b)
                jt[a * 3 + b] = dot3_col(jac + a * 3, cc, b);
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b)
                c2[a * 2 + b] = dot3(jt + a * 3, jac + b * 3);
        const float m2x = r(dot3(cam.k, mc) / tz), m2y = r(dot3(cam.k + 3, mc) / tz);
        const float c00 = r(c2[0] + st.eps), c01 = c2[1], c10 = c2[2], c11 = r(c2[3] + st.eps);
        float det = r(r(c00 * c11) - r(c01 * c10));
        if (det < 1e-10f)
            det = r(1e-10f);
        float rx = ceilf(r(3.33f * r(sqrtf(c00)))), ry = ceilf(r(3.33f * r(sqrtf(c11))));
        if (!(tz > st.near_plane && tz < st.far_plane))
            rx = ry = 0.0f;
        if (!(r(m2x + rx) > 0 && r(m2x - rx) < st.width && r(m2y + ry) > 0 && r(m2y - ry) < st.height))
            rx = ry = 0.0f;
        Record rec;
        rec.camera = 0;
        rec.gaussian = i + first_gaussian[c];
        rec.radius[0] = static_cast<int>(rx);
        rec.radius[1] = static_cast<int>(ry);
        const float vals[10] = {m2x,
                                m2y,
                                tz,
                                r(c11 / det),
                                r(r(-r(c01 + c10) * 0.5f) / det),
                                r(c00 / det),
                                in(opacities, i),
                                in(colors, i * 3),
                                in(colors, i * 3 + 1),
                                in(colors, i * 3 + 2)};
        for (int j = 0; j < 10; ++j)
            rec.values[j] = vals[j];
        records[t] = rec;
        flags[t] = rec.radius[0] > 0 && rec.radius[1] > 0;
    }
}

__global__ void pack(const Record* records, const int* flags, const long long* at, long long pairs,
                     Record* out) {
    for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < pairs;
         t += static_cast<long long>(gridDim.x) * blockDim.x)
        if (flags[t])
            out[at[t]] = records[t];
}

__global__ void unpack(const Record* recv, long long k, long long* cam_ids, long long* gauss_ids, int* radii,
                       __nv_bfloat16* m2, __nv_bfloat16* depth, __nv_bfloat16* conic, __nv_bfloat16* opac,
                       __nv_bfloat16* col) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < k;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const Record& rec = recv[i];
        cam_ids[i] = rec.camera;
        gauss_ids[i] = rec.gaussian;
        radii[2 * i] = rec.radius[0];
        radii[2 * i + 1] = rec.radius[1];
        for (int j = 0; j < 2; ++j)
            m2[2 * i + j] = __float2bfloat16_rn(rec.values[j]);
        depth[i] = __float2bfloat16_rn(rec.values[2]);
        for (int j = 0; j < 3; ++j)
            conic[3 * i + j] = __float2bfloat16_rn(rec.values[3 + j]);
        opac[i] = __float2bfloat16_rn(rec.values[6]);
        for (int j = 0; j < 3; ++j)
            col[3 * i + j] = __float2bfloat16_rn(rec.values[7 + j]);
    }
}

unsigned blocks_for(long long count) {
    return static_cast<unsigned>(count / 256 + 1 > 4096 ? 4096 : count / 256 + 1);
}

// The per-camera terms of PKB's _persp_proj, op by op in bf16 (tan_fov = reciprocal(f) * 0.5 * size).
CameraTerms camera_terms(const Camera& c, const Settings& st) {
    CameraTerms t;
    for (int i = 0; i < 16; ++i)
        t.view[i] = c.view[i];
    for (int i = 0; i < 9; ++i)
        t.k[i] = c.k[i];
    const float fx = c.k[0], fy = c.k[4], cx = c.k[2], cy = c.k[5];
    const float tan_x = r(r(1.0f / fx) * (0.5f * st.width)), tan_y = r(r(1.0f / fy) * (0.5f * st.height));
    t.lim_xp = r(r(r(st.width - cx) / fx) + r(0.3f * tan_x));
    t.lim_xn = r(r(cx / fx) + r(0.3f * tan_x));
    t.lim_yp = r(r(r(st.height - cy) / fy) + r(0.3f * tan_y));
    t.lim_yn = r(r(cy / fy) + r(0.3f * tan_y));
    return t;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int world = ctx.world_size, me = ctx.rank;
    const long long n = ctx.input(0).shape[0], pairs = n * world;
    const Settings st{static_cast<float>(ctx.param("image_width")),
                      static_cast<float>(ctx.param("image_height")),
                      r(static_cast<float>(ctx.param("eps2d"))), static_cast<float>(ctx.param("near_plane")),
                      static_cast<float>(ctx.param("far_plane"))};
    // Symmetric layout: n, W counts, this rank's camera (padded to 64 bytes), then up to W*n records.
    const std::size_t cam_at = sizeof(long long) * (1 + world);
    const std::size_t rec_at = (cam_at + sizeof(Camera) + 63) / 64 * 64;
    const pkbw::SymmetricMemory sym = ctx.symmetric("gsplat61_baseline", rec_at + sizeof(Record) * pairs);
    char* base = static_cast<char*>(sym.local);
    std::vector<__nv_bfloat16> raw(25);
    cudaMemcpyAsync(raw.data(), ctx.input(5).data, 16 * 2, cudaMemcpyDeviceToHost, ctx.stream());
    cudaMemcpyAsync(raw.data() + 16, ctx.input(6).data, 9 * 2, cudaMemcpyDeviceToHost, ctx.stream());
    cudaStreamSynchronize(ctx.stream());
    Camera mine;
    for (int i = 0; i < 16; ++i)
        mine.view[i] = __bfloat162float(raw[i]);
    for (int i = 0; i < 9; ++i)
        mine.k[i] = __bfloat162float(raw[16 + i]);
    cudaMemcpyAsync(base, &n, sizeof n, cudaMemcpyHostToDevice, ctx.stream());
    cudaMemcpyAsync(base + cam_at, &mine, sizeof mine, cudaMemcpyHostToDevice, ctx.stream());
    ctx.barrier(); // waits for this rank's stream first

    std::vector<CameraTerms> terms(world);
    std::vector<long long> first(world), n_peer(world);
    long long prefix = 0; // gaussian ids are offset by the DESTINATION's prefix of n (PKB)
    for (int p = 0; p < world; ++p) {
        Camera cam;
        cudaMemcpy(&n_peer[p], sym.peers[p], sizeof(long long), cudaMemcpyDeviceToHost);
        cudaMemcpy(&cam, static_cast<const char*>(sym.peers[p]) + cam_at, sizeof cam, cudaMemcpyDeviceToHost);
        terms[p] = camera_terms(cam, st);
        first[p] = prefix;
        prefix += n_peer[p];
    }
    auto* cams = static_cast<CameraTerms*>(ctx.scratch("gsplat61_cams", sizeof(CameraTerms) * world));
    auto* first_dev = static_cast<long long*>(ctx.scratch("gsplat61_first", sizeof(long long) * world));
    auto* records = static_cast<Record*>(ctx.scratch("gsplat61_records", sizeof(Record) * pairs));
    auto* flags = static_cast<int*>(ctx.scratch("gsplat61_flags", sizeof(int) * pairs));
    auto* at_dev = static_cast<long long*>(ctx.scratch("gsplat61_at", sizeof(long long) * pairs));
    cudaMemcpyAsync(cams, terms.data(), sizeof(CameraTerms) * world, cudaMemcpyHostToDevice, ctx.stream());
    cudaMemcpyAsync(first_dev, first.data(), sizeof(long long) * world, cudaMemcpyHostToDevice, ctx.stream());
    project<<<blocks_for(pairs), 256, 0, ctx.stream()>>>(
        ctx.input(0).data, ctx.input(1).data, ctx.input(2).data, ctx.input(3).data, ctx.input(4).data, n,
        pairs, cams, first_dev, st, records, flags);
    std::vector<int> flag(pairs);
    std::vector<long long> at(pairs), counts(world, 0);
    cudaMemcpyAsync(flag.data(), flags, sizeof(int) * pairs, cudaMemcpyDeviceToHost, ctx.stream());
    cudaStreamSynchronize(ctx.stream());
    long long packed = 0;
    for (long long t = 0; t < pairs; ++t) {
        at[t] = packed;
        packed += flag[t];
        counts[t / n] += flag[t];
    }
    cudaMemcpyAsync(at_dev, at.data(), sizeof(long long) * pairs, cudaMemcpyHostToDevice, ctx.stream());
    cudaMemcpyAsync(base + sizeof(long long), counts.data(), sizeof(long long) * world,
                    cudaMemcpyHostToDevice, ctx.stream());
    pack<<<blocks_for(pairs), 256, 0, ctx.stream()>>>(records, flags, at_dev, pairs,
                                                      reinterpret_cast<Record*>(base + rec_at));
    ctx.barrier();

    auto* recv = static_cast<Record*>(ctx.scratch("gsplat61_recv", sizeof(Record) * ctx.output(0).shape[0]));
    long long k = 0;
    std::vector<long long> peer_counts(world);
    for (int p = 0; p < world; ++p) {
        const char* peer = static_cast<const char*>(sym.peers[p]);
        cudaMemcpy(peer_counts.data(), peer + sizeof(long long), sizeof(long long) * world,
                   cudaMemcpyDeviceToHost);
        long long start = 0;
        for (int q = 0; q < me; ++q)
            start += peer_counts[q];
        if (k + peer_counts[me] > ctx.output(0).shape[0])
            return ctx.fail("more pairs than the outputs hold");
        cudaMemcpyAsync(recv + k, peer + rec_at + start * sizeof(Record), peer_counts[me] * sizeof(Record),
                        cudaMemcpyDeviceToDevice, ctx.stream());
        k += peer_counts[me];
    }
    if (k > 0)
        unpack<<<blocks_for(k), 256, 0, ctx.stream()>>>(
            recv, k, ctx.output(0).as<long long>(), ctx.output(1).as<long long>(), ctx.output(2).as<int>(),
            ctx.output(3).as<__nv_bfloat16>(), ctx.output(4).as<__nv_bfloat16>(),
            ctx.output(5).as<__nv_bfloat16>(), ctx.output(6).as<__nv_bfloat16>(),
            ctx.output(7).as<__nv_bfloat16>());
    ctx.barrier();
    for (int o = 0; o < ctx.num_outputs; ++o)
        if (ctx.set_output_length(o, k) != 0)
            return 1;
    return 0;
}
