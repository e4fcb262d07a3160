// Long convolutions by FFT on cuFFT (72; the plan cache is meant for 59 and 60's batched transforms too).
//
//   fft_plan(ctx, key, plan)         a cached cufftHandle for one transform layout (cufftPlanMany's
//                                    arguments), created once per process and destroyed at its exit
//   long_convolution<T>(ctx, c, u, h, y)
//       y[ch, t] = Σ_s u[ch, s] · h[ch, (t - s) mod n]  for t < length, n = c.fft_size, in fp32:
//       PKB's _fftconv_ref, irfft(rfft(u, n) · rfft(h, n) / n, n, norm="forward")[..., :length], with u
//       and h widened to fp32 and zero-padded (h truncated) to n. The caller adds its own terms (the
//       bias) and rounds.
//
// The transforms are batched over the channels: R2C of u and of h, a pointwise product scaled by 1/n
// (torch divides the kernel's spectrum by n before the product: the same fp32 operations), C2R. cuFFT's
// inverse is unscaled, which is what norm="forward" asks of irfft. Workspace comes from ctx.scratch.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cufft.h>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace pkbw::tk {

inline bool is_ok(cufftResult status) {
    return status == CUFFT_SUCCESS;
}
inline const char* error_string(cufftResult status) {
    switch (status) {
    case CUFFT_INVALID_PLAN:
        return "cuFFT: invalid plan";
    case CUFFT_ALLOC_FAILED:
        return "cuFFT: allocation failed";
    case CUFFT_INVALID_VALUE:
        return "cuFFT: invalid value";
    case CUFFT_INTERNAL_ERROR:
        return "cuFFT: internal error";
    case CUFFT_EXEC_FAILED:
        return "cuFFT: execution failed";
    case CUFFT_SETUP_FAILED:
        return "cuFFT: setup failed";
    case CUFFT_INVALID_SIZE:
        return "cuFFT: invalid size";
    default:
        return "cuFFT: error";
    }
}

// One transform layout, as cufftPlanMany takes it (1-D, advanced layout).
struct FftPlanKey {
    cufftType type = CUFFT_R2C;
    long long n = 0;
    long long batch = 1;
    long long istride = 1, idist = 0, ostride = 1, odist = 0;
    int device = 0;
    bool operator<(const FftPlanKey& o) const {
        return std::tie(type, n, batch, istride, idist, ostride, odist, device) <
               std::tie(o.type, o.n, o.batch, o.istride, o.idist, o.ostride, o.odist, o.device);
    }
};

// A cufftHandle owned for the process's life.
class FftPlan {
public:
    explicit FftPlan(cufftHandle handle)
        : handle_(handle) {}
    FftPlan(const FftPlan&) = delete;
    FftPlan& operator=(const FftPlan&) = delete;
    ~FftPlan() { cufftDestroy(handle_); }
    cufftHandle get() const { return handle_; }

private:
    cufftHandle handle_;
};

// The cached plan for `key` (created on first use), bound to ctx.stream(). Plans are per process and
// per device; the mutex covers ranks that share a process.
inline int fft_plan(const Context& ctx, const FftPlanKey& key, cufftHandle& plan) {
    static std::mutex lock;
    static std::map<FftPlanKey, std::unique_ptr<FftPlan>> plans;
    const std::lock_guard<std::mutex> guard(lock);
    auto found = plans.find(key);
    if (found == plans.end()) {
        cufftHandle handle = 0;
        PKBW_CHECK(ctx, cufftCreate(&handle));
        auto owned = std::make_unique<FftPlan>(handle);
        long long n = key.n, inembed = key.n, onembed = key.n;
        std::size_t work = 0;
        PKBW_CHECK(ctx, cufftMakePlanMany64(handle, 1, &n, &inembed, key.istride, key.idist, &onembed,
                                            key.ostride, key.odist, key.type, key.batch, &work));
        found = plans.emplace(key, std::move(owned)).first;
    }
    plan = found->second->get();
    PKBW_CHECK(ctx, cufftSetStream(plan, ctx.stream()));
    return 0;
}

struct LongConv {
    long long channels = 0;
    long long length = 0;     // samples of u per channel (and of y)
    long long filter_len = 0; // samples of h per channel
    long long fft_size = 0;   // n: PKB's 2 * length
};

namespace detail {

// Row ch of `src` ([channels, len]) widened to fp32 into dst [channels, n], zero beyond min(len, n).
template <class T>
__global__ void pad_rows(const T* src, long long len, float* dst, long long n, long long rows) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < rows * n; i += PKBW_GRID_STRIDE_STEP) {
        const long long r = i / n, t = i % n;
        dst[i] = t < len ? to_float(src[r * len + t]) : 0.f;
    }
}

// u_f *= h_f / n, as torch computes (rfft(h) / n) * rfft(u) in complex64.
static __global__ void scaled_product(cufftComplex* u_f, const cufftComplex* h_f, long long count, float n) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        const cufftComplex k = {__fdiv_rn(h_f[i].x, n), __fdiv_rn(h_f[i].y, n)}, u = u_f[i];
        u_f[i] = {__fsub_rn(__fmul_rn(u.x, k.x), __fmul_rn(u.y, k.y)),
                  __fadd_rn(__fmul_rn(u.x, k.y), __fmul_rn(u.y, k.x))};
    }
}

// The first `length` samples of each row of the inverse transform [channels, n].
static __global__ void first_samples(const float* full, long long n, float* y, long long length,
                                     long long rows) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < rows * length; i += PKBW_GRID_STRIDE_STEP) {
        y[i] = full[(i / length) * n + i % length];
    }
}

} // namespace detail

// y [channels, length] (fp32) from u [channels, length] and h [channels, filter_len] in T. Scratch names
// start with "fftconv_": two real rows of n and two spectra of n/2 + 1 per channel.
template <class T>
int long_convolution(const Context& ctx, const LongConv& c, const T* u, const T* h, float* y) {
    const long long n = c.fft_size, bins = n / 2 + 1, rows = c.channels;
    if (n < 2 || n % 2 != 0 || c.length > n) {
        return ctx.fail("long_convolution: fft_size must be even and at least the length");
    }
    const std::size_t real_bytes = static_cast<std::size_t>(rows * n) * sizeof(float),
                      spectrum_bytes = static_cast<std::size_t>(rows * bins) * sizeof(cufftComplex);
    float* u_pad = static_cast<float*>(ctx.scratch("fftconv_u", real_bytes));
    float* h_pad = static_cast<float*>(ctx.scratch("fftconv_h", real_bytes));
    auto* u_f = static_cast<cufftComplex*>(ctx.scratch("fftconv_u_f", spectrum_bytes));
    auto* h_f = static_cast<cufftComplex*>(ctx.scratch("fftconv_h_f", spectrum_bytes));
    if (!u_pad || !h_pad || !u_f || !h_f) {
        return ctx.fail("long_convolution: no scratch memory");
    }
    int device = 0;
    PKBW_CHECK(ctx, cudaGetDevice(&device));
    cufftHandle forward = 0, inverse = 0;
    PKBW_TRY(fft_plan(ctx, {CUFFT_R2C, n, rows, 1, n, 1, bins, device}, forward));
    PKBW_TRY(fft_plan(ctx, {CUFFT_C2R, n, rows, 1, bins, 1, n, device}, inverse));

    const unsigned grid = grid_for(rows * n);
    detail::pad_rows<T><<<grid, 256, 0, ctx.stream()>>>(u, c.length, u_pad, n, rows);
    detail::pad_rows<T><<<grid, 256, 0, ctx.stream()>>>(h, c.filter_len, h_pad, n, rows);
    PKBW_CHECK(ctx, cufftExecR2C(forward, u_pad, u_f));
    PKBW_CHECK(ctx, cufftExecR2C(forward, h_pad, h_f));
    detail::scaled_product<<<grid_for(rows * bins), 256, 0, ctx.stream()>>>(u_f, h_f, rows * bins,
                                                                            static_cast<float>(n));
    PKBW_CHECK(ctx, cufftExecC2R(inverse, u_f, u_pad));
    detail::first_samples<<<grid_for(rows * c.length), 256, 0, ctx.stream()>>>(u_pad, n, y, c.length, rows);
    return finish(ctx);
}

} // namespace pkbw::tk
