// Gaussian-splatting geometry of PKB 61 (gsplat's _torch_impl: _quat_scale_to_covar_preci,
// _world_to_cam, _persp_proj, _fully_fused_projection), op by op on bf16 tensors as PyTorch's eager
// CUDA kernels compute them, one arithmetic for the device and the host.
//
// Every torch op on bf16 tensors computes in its opmath type and stores bf16: here each op is one
// expression in `Real` followed by bf16_round. Two instantiations:
//   float   torch's arithmetic (the CUDA reference, the host oracle and the tests of both): fp32 ops,
//           Python scalars cast to fp32 as CUDA's kernels read CPU scalars (0.3 -> 0.3f), IEEE division
//           and square root (__fdiv_rn, __fsqrt_rn on the device), comparisons with a scalar in fp32.
//   double  the float64 twin: each op exact or in double, rounded once to bf16. It differs from the
//           float path only where an fp32 result lands on a bf16 rounding boundary that the exact
//           value does not (double rounding), which moves a bf16 value by one ulp (test_gsplat_geometry
//           counts how often).
// Einsums run as cuBLAS batched GEMMs with fp32 accumulation: a dot product of K = 3 bf16 operands is
// summed in index order in Real (the products are exact in fp32, so an FMA chain gives the same sum)
// and rounded once. Three-operand einsums contract left to right (torch's order without opt_einsum),
// each intermediate rounded to bf16. The norm of a quaternion sums its four squares in order in fp32
// (torch's reduction order for four terms is its kernel's; it matters only where the fp32 sum rounds).
//
//   GsplatView                      the image size and PKB's eps2d, near_plane, far_plane
//   gsplat_camera(view, vm, K)      a camera's rotation, translation, intrinsics and clamp limits
//   gsplat_covariance(q, s, cov)    the 3-D covariance R(q)·diag(s)·(R(q)·diag(s))^T
//   gsplat_project(mean, cov, cam)  radii (int), means2d, depth, conics of one (camera, gaussian)
//                                   pair; visible() is PKB's packing rule (both radii > 0)
//   GsplatRecord, gsplat_record     a visible pair's row of PKB's eight outputs as it is exchanged
#pragma once

#include "pkbw/toolkit/trilinear.h" // round_to_bf16

#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define PKBW_GSPLAT_FN __host__ __device__ inline
#else
#define PKBW_GSPLAT_FN inline
#endif

namespace pkbw::tk {

// double -> bf16 -> double, round to nearest even from the exact double (no fp32 step).
PKBW_GSPLAT_FN double round_f64_to_bf16(double v) {
    const double abs = v < 0 ? -v : v;
    if (!(abs >= 1.1754943508222875e-38)) // zero, bf16 subnormals and NaN: through fp32
        return static_cast<double>(round_to_bf16(static_cast<float>(v)));
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    bits += 0xfffffffffffull + ((bits >> 45) & 1u); // 45 of 52 fraction bits dropped
    bits &= ~((std::uint64_t{1} << 45) - 1);
    double r;
    std::memcpy(&r, &bits, sizeof r);
    const double bf16_max = 3.3895313892515355e38;
    if (r > bf16_max || r < -bf16_max)
        return r > 0 ? HUGE_VAL : -HUGE_VAL;
    return r;
}

PKBW_GSPLAT_FN float bf16_round(float v) {
    return round_to_bf16(v);
}
PKBW_GSPLAT_FN double bf16_round(double v) {
    return round_f64_to_bf16(v);
}

PKBW_GSPLAT_FN float gs_div(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}
PKBW_GSPLAT_FN double gs_div(double a, double b) {
    return a / b;
}
PKBW_GSPLAT_FN float gs_sqrt(float a) {
#ifdef __CUDA_ARCH__
    return __fsqrt_rn(a);
#else
    return std::sqrt(a);
#endif
}
PKBW_GSPLAT_FN double gs_sqrt(double a) {
    return sqrt(a);
}
PKBW_GSPLAT_FN float gs_ceil(float a) {
    return ceilf(a);
}
PKBW_GSPLAT_FN double gs_ceil(double a) {
    return ceil(a);
}

// A bf16 tensor's value as an int32 (torch's .int(): truncation; NaN gives 0 as CUDA's conversion does).
template <class Real>
PKBW_GSPLAT_FN int gs_to_int(Real v) {
    return v == v ? static_cast<int>(v) : 0;
}

struct GsplatView {
    long long width = 0, height = 0;
    double eps2d = 0.3, near_plane = 0.01, far_plane = 1e10;
};

template <class Real>
struct GsplatCamera {
    Real rot[9], trans[3]; // viewmat[:3, :3], viewmat[:3, 3]
    Real k[6];             // K[:2, :3]
    Real lim_x_pos, lim_x_neg, lim_y_pos, lim_y_neg;
    Real width, height, eps, near_plane, far_plane; // the scalars as the kernels read them
};

// PKB's per-camera terms of _persp_proj: tan_fov = 0.5·width / fx is reciprocal(fx) · (0.5·width)
// (Tensor.__rtruediv__), lim_x_pos = (width - cx) / fx + 0.3·tan_fovx, and so on, each op rounded.
template <class Real>
PKBW_GSPLAT_FN GsplatCamera<Real> gsplat_camera(const GsplatView& view, const Real* viewmat, const Real* K) {
    GsplatCamera<Real> cam;
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j)
            cam.rot[i * 3 + j] = viewmat[i * 4 + j];
        cam.trans[i] = viewmat[i * 4 + 3];
    }
    for (int i = 0; i < 6; ++i)
        cam.k[i] = K[i];
    const Real fx = K[0], fy = K[4], cx = K[2], cy = K[5];
    const Real w = static_cast<Real>(view.width), h = static_cast<Real>(view.height);
    const Real tan_fovx = bf16_round(bf16_round(gs_div(Real(1), fx)) * static_cast<Real>(0.5 * view.width));
    const Real tan_fovy = bf16_round(bf16_round(gs_div(Real(1), fy)) * static_cast<Real>(0.5 * view.height));
    const Real margin_x = bf16_round(static_cast<Real>(0.3) * tan_fovx);
    const Real margin_y = bf16_round(static_cast<Real>(0.3) * tan_fovy);
    cam.lim_x_pos = bf16_round(bf16_round(gs_div(bf16_round(w - cx), fx)) + margin_x);
    cam.lim_x_neg = bf16_round(bf16_round(gs_div(cx, fx)) + margin_x);
    cam.lim_y_pos = bf16_round(bf16_round(gs_div(bf16_round(h - cy), fy)) + margin_y);
    cam.lim_y_neg = bf16_round(bf16_round(gs_div(cy, fy)) + margin_y);
    cam.width = w;
    cam.height = h;
    cam.eps = bf16_round(static_cast<Real>(view.eps2d)); // torch.eye(2, bf16) * eps2d
    cam.near_plane = static_cast<Real>(view.near_plane);
    cam.far_plane = static_cast<Real>(view.far_plane);
    return cam;
}

// Row i of a (rows x 3) by column l of b^T: sum_j a[i][j] b[l][j] (einsum "ij,lj->il"), rounded.
template <class Real>
PKBW_GSPLAT_FN Real gs_dot3(const Real* a_row, const Real* b_row) {
    Real acc = a_row[0] * b_row[0];
    acc = acc + a_row[1] * b_row[1];
    acc = acc + a_row[2] * b_row[2];
    return bf16_round(acc);
}
// sum_j a[i][j] b[j][k] for a row of a and a column k of a 3-row matrix b (row stride 3), rounded.
template <class Real>
PKBW_GSPLAT_FN Real gs_dot3_column(const Real* a_row, const Real* b, int k) {
    Real acc = a_row[0] * b[k];
    acc = acc + a_row[1] * b[3 + k];
    acc = acc + a_row[2] * b[6 + k];
    return bf16_round(acc);
}

// _quat_scale_to_covar_preci(quats, scales, triu=False)'s covariance of one gaussian: F.normalize(q)
// (norm rounded, clamp_min(1e-12), division rounded), _quat_to_rotmat's nine entries op by op,
// M = R * s (per column), covar = M · M^T.
template <class Real>
PKBW_GSPLAT_FN void gsplat_covariance(const Real* quat, const Real* scale, Real* cov) {
    Real sum = quat[0] * quat[0];
    for (int i = 1; i < 4; ++i)
        sum = sum + quat[i] * quat[i];
    Real norm = bf16_round(gs_sqrt(sum));
    if (norm < static_cast<Real>(1e-12))
        norm = bf16_round(static_cast<Real>(1e-12));
    const Real w = bf16_round(gs_div(quat[0], norm)), x = bf16_round(gs_div(quat[1], norm));
    const Real y = bf16_round(gs_div(quat[2], norm)), z = bf16_round(gs_div(quat[3], norm));
    auto r = [](Real v) { return bf16_round(v); };
    const Real xx = r(x * x), yy = r(y * y), zz = r(z * z);
    const Real xy = r(x * y), xz = r(x * z), yz = r(y * z), wx = r(w * x), wy = r(w * y), wz = r(w * z);
    auto diag = [&](Real a, Real b) { return r(Real(1) - r(Real(2) * r(a + b))); };
    auto twice_diff = [&](Real a, Real b) { return r(Real(2) * r(a - b)); };
    auto twice_sum = [&](Real a, Real b) { return r(Real(2) * r(a + b)); };
    const Real rot[9] = {diag(yy, zz),       twice_diff(xy, wz), twice_sum(xz, wy),
                         twice_sum(xy, wz),  diag(xx, zz),       twice_diff(yz, wx),
                         twice_diff(xz, wy), twice_sum(yz, wx),  diag(xx, yy)};
    Real m[9];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            m[i * 3 + j] = r(rot[i * 3 + j] * scale[j]);
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k)
            cov[i * 3 + k] = gs_dot3(m + i * 3, m + k * 3);
}

template <class Real>
struct GsplatProjection {
    int radius[2];
    Real mean2d[2];
    Real depth;
    Real conic[3];
    PKBW_GSPLAT_FN bool visible() const { return radius[0] > 0 && radius[1] > 0; }
};

// _world_to_cam then _persp_proj's Jacobian J (2 x 3) and cov2d = J · cov_c · J^T of one pair; writes
// the camera-space mean, the unclamped one being what means2d and depths read.
template <class Real>
PKBW_GSPLAT_FN void gsplat_cov2d(const Real* mean, const Real* cov, const GsplatCamera<Real>& cam,
                                 Real* mean_c, Real* cov2d) {
    for (int i = 0; i < 3; ++i)
        mean_c[i] = bf16_round(gs_dot3(cam.rot + i * 3, mean) + cam.trans[i]);
    Real t[9], cov_c[9]; // (R · cov) rounded, then · R^T rounded
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k)
            t[i * 3 + k] = gs_dot3_column(cam.rot + i * 3, cov, k);
    for (int i = 0; i < 3; ++i)
        for (int l = 0; l < 3; ++l)
            cov_c[i * 3 + l] = gs_dot3(t + i * 3, cam.rot + l * 3);
    auto r = [](Real v) { return bf16_round(v); };
    const Real tx = mean_c[0], ty = mean_c[1], tz = mean_c[2];
    const Real tz2 = r(tz * tz);
    auto clamp = [](Real v, Real lo, Real hi) {
        if (v != v)
            return v;
        const Real above = v < lo ? lo : v;
        return above > hi ? hi : above;
    };
    const Real txc = r(tz * clamp(r(gs_div(tx, tz)), -cam.lim_x_neg, cam.lim_x_pos));
    const Real tyc = r(tz * clamp(r(gs_div(ty, tz)), -cam.lim_y_neg, cam.lim_y_pos));
    const Real fx = cam.k[0], fy = cam.k[4];
    const Real jac[6] = {r(gs_div(fx, tz)), Real(0),           r(gs_div(r(-fx * txc), tz2)),
                         Real(0),           r(gs_div(fy, tz)), r(gs_div(r(-fy * tyc), tz2))};
    Real jt[6]; // (J · cov_c) rounded, then · J^T rounded
    for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 3; ++k)
            jt[i * 3 + k] = gs_dot3_column(jac + i * 3, cov_c, k);
    for (int i = 0; i < 2; ++i)
        for (int l = 0; l < 2; ++l)
            cov2d[i * 2 + l] = gs_dot3(jt + i * 3, jac + l * 3);
}

// The rest of _fully_fused_projection for one pair: eps2d on the diagonal, det (clamped at 1e-10),
// conics, radii ceil(3.33·sqrt(cov)) zeroed outside (near, far) and outside the image.
template <class Real>
PKBW_GSPLAT_FN GsplatProjection<Real> gsplat_project(const Real* mean, const Real* cov,
                                                     const GsplatCamera<Real>& cam) {
    auto r = [](Real v) { return bf16_round(v); };
    Real mean_c[3], cov2d[4];
    gsplat_cov2d(mean, cov, cam, mean_c, cov2d);
    GsplatProjection<Real> out;
    const Real tz = mean_c[2];
    for (int i = 0; i < 2; ++i) // einsum(K[:2, :3], means_c) / tz
        out.mean2d[i] = r(gs_div(gs_dot3(cam.k + i * 3, mean_c), tz));
    out.depth = tz;
    const Real c00 = r(cov2d[0] + cam.eps), c01 = r(cov2d[1] + Real(0));
    const Real c10 = r(cov2d[2] + Real(0)), c11 = r(cov2d[3] + cam.eps);
    Real det = r(r(c00 * c11) - r(c01 * c10));
    if (det < static_cast<Real>(1e-10))
        det = r(static_cast<Real>(1e-10));
    out.conic[0] = r(gs_div(c11, det));
    out.conic[1] = r(gs_div(r(-r(c01 + c10) * Real(0.5)), det)); // / 2.0: times its reciprocal
    out.conic[2] = r(gs_div(c00, det));
    Real rx = gs_ceil(r(static_cast<Real>(3.33) * r(gs_sqrt(c00))));
    Real ry = gs_ceil(r(static_cast<Real>(3.33) * r(gs_sqrt(c11))));
    if (!(tz > cam.near_plane && tz < cam.far_plane))
        rx = ry = Real(0);
    const bool inside = r(out.mean2d[0] + rx) > Real(0) && r(out.mean2d[0] - rx) < cam.width &&
                        r(out.mean2d[1] + ry) > Real(0) && r(out.mean2d[1] - ry) < cam.height;
    if (!inside)
        rx = ry = Real(0);
    out.radius[0] = gs_to_int(rx);
    out.radius[1] = gs_to_int(ry);
    return out;
}

// PKB's colors have 3 channels.
constexpr long long kGsplatChannels = 3;

// One packed pair as it travels: PKB's eight outputs' row (the ids int64, radii int32, the rest bf16
// values held as float: means2d 2, depth, conics 3, opacity, colors 3).
struct GsplatRecord {
    long long camera = 0, gaussian = 0;
    int radius[2] = {0, 0};
    float values[10] = {};
};

// The record of a visible pair: its projection, the ids as PKB sends them, the gaussian's opacity and
// colors (bf16 values).
template <class Real>
PKBW_GSPLAT_FN GsplatRecord gsplat_record(const GsplatProjection<Real>& p, long long camera,
                                          long long gaussian, const Real* opacity, const Real* colors) {
    GsplatRecord rec;
    rec.camera = camera;
    rec.gaussian = gaussian;
    rec.radius[0] = p.radius[0];
    rec.radius[1] = p.radius[1];
    const Real row[7] = {p.mean2d[0], p.mean2d[1], p.depth, p.conic[0], p.conic[1], p.conic[2], *opacity};
    for (int k = 0; k < 7; ++k)
        rec.values[k] = static_cast<float>(row[k]);
    for (int k = 0; k < kGsplatChannels; ++k)
        rec.values[7 + k] = static_cast<float>(colors[k]);
    return rec;
}

} // namespace pkbw::tk
