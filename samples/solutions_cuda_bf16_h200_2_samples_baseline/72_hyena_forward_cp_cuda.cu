// Hand-written sample candidate (not LLM output)
// PKB 72 (x1, x2, v [1, C, 2N] bf16 = this rank's zigzag chunks r and 2W-1-r of a sequence of L = 2NW
// samples, h [C, 4N], conv_bias [C]; z = x2 v; on channel shards y = irfft(rfft(z, 2L) rfft(h, 2L) / 2L)[:L]
// + z bias in fp32, rounded to bf16; out = x1 y, back on the sequence shards, transposed to [1, 2N, C]),
// baseline: z into a symmetric buffer, a host barrier, one kernel gathers this rank's channels over the
// whole sequence from their owners (fp32, zero-padded to 2L), cuFFT convolves them as torch does (R2C of
// z and h, the product with rfft(h) / 2L, C2R), one kernel adds z bias and rounds, a host barrier, one
// kernel reads every channel's samples of this rank from their owners and gates them with x1.
// The convolution goes through cuFFT with torch's plan and operations, not a direct sum: the outputs
// cancel (h is positive and large, z of either sign), so an fp32 direct sum and torch's FFT round the
// small outputs differently by more than PKB's tolerance.
#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <cufft.h>

namespace {

using bf16 = __nv_bfloat16;

struct Peers {
    const bf16* p[8];
};

__device__ long long chunk_at(long long p, long long n) {
    return p % 2 == 0 ? p / 2 : n - 1 - p / 2;
}
__device__ long long position_of(long long chunk, long long n) {
    return chunk < (n + 1) / 2 ? 2 * chunk : 2 * (n - 1 - chunk) + 1;
}

__global__ void product(const bf16* a, const bf16* b, bf16* z, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        z[i] = __float2bfloat16(__bfloat162float(a[i]) * __bfloat162float(b[i]));
}

// u [local, n] fp32: this rank's channels over the whole sequence (read from the owners of their
// zigzag chunks), zero beyond `length`.
__global__ void gather_padded(Peers z, float* u, long long local, long long first, long long ls,
                              long long length, long long n, int world) {
    const long long half = ls / 2;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < local * n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long c = i / n, g = i % n;
        float value = 0.f;
        if (g < length) {
            const long long p = position_of(g / half, 2LL * world);
            value = __bfloat162float(z.p[p / 2][(first + c) * ls + (p % 2) * half + g % half]);
        }
        u[i] = value;
    }
}

// hp [local, n] fp32: the channels' filters, zero-padded (or truncated) to n.
__global__ void pad_filters(const bf16* h, float* hp, long long local, long long taps, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < local * n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long c = i / n, t = i % n;
        hp[i] = t < taps ? __bfloat162float(h[c * taps + t]) : 0.f;
    }
}

// u_f *= h_f / n in complex64, each operation rounded as torch's kernels do (no fused multiply-adds).
__global__ void scaled_product(cufftComplex* u_f, const cufftComplex* h_f, long long count, float n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x) {
        const cufftComplex k = {__fdiv_rn(h_f[i].x, n), __fdiv_rn(h_f[i].y, n)}, u = u_f[i];
        u_f[i] = {__fsub_rn(__fmul_rn(u.x, k.x), __fmul_rn(u.y, k.y)),
                  __fadd_rn(__fmul_rn(u.x, k.y), __fmul_rn(u.y, k.x))};
    }
}

// y [local, length] = r(full[:length] + u bias): torch's `y + u_float * bias` in fp32, the product
// rounded before the sum (a fused multiply-add would round once where torch rounds twice).
__global__ void add_bias(const float* full, const float* u, const bf16* bias, bf16* y, long long local,
                         long long length, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < local * length;
         i += (long long)gridDim.x * blockDim.x) {
        const long long c = i / length, t = i % length;
        const float term = __fmul_rn(u[c * n + t], __bfloat162float(bias[c]));
        y[i] = __float2bfloat16(__fadd_rn(full[c * n + t], term));
    }
}

// The batched R2C and C2R plans of length n over `rows` rows, kept while the shape stays.
struct Plans {
    long long n = 0, rows = 0;
    cufftHandle forward = 0, inverse = 0;
    bool ready = false;
    ~Plans() { release(); }
    void release() {
        if (ready) {
            cufftDestroy(forward);
            cufftDestroy(inverse);
        }
        ready = false;
    }
    bool make(long long size, long long batch) {
        if (ready && size == n && batch == rows)
            return true;
        release();
        long long len = size, embed = size, bins = size / 2 + 1;
        size_t work = 0;
        if (cufftCreate(&forward) != CUFFT_SUCCESS)
            return false;
        if (cufftCreate(&inverse) != CUFFT_SUCCESS) {
            cufftDestroy(forward);
            return false;
        }
        ready = true;
        n = size;
        rows = batch;
        const bool made = cufftMakePlanMany64(forward, 1, &len, &embed, 1, size, &embed, 1, bins, CUFFT_R2C,
                                              batch, &work) == CUFFT_SUCCESS &&
                          cufftMakePlanMany64(inverse, 1, &len, &embed, 1, bins, &embed, 1, size, CUFFT_C2R,
                                              batch, &work) == CUFFT_SUCCESS;
        if (!made)
            release();
        return made;
    }
};

// y [local, length] bf16 for this rank's channels: torch's _fftconv_ref on cuFFT.
bool convolve(const pkbw::Context& ctx, Peers z, const bf16* h, const bf16* bias, bf16* y, long long local,
              long long first, long long ls, long long length, long long taps) {
    static Plans plans;
    const long long n = 2 * length, bins = n / 2 + 1;
    const size_t real_bytes = local * n * sizeof(float), spectrum_bytes = local * bins * sizeof(cufftComplex);
    float* u = static_cast<float*>(ctx.scratch("hyena72_u", real_bytes));
    float* hp = static_cast<float*>(ctx.scratch("hyena72_h", real_bytes));
    auto* u_f = static_cast<cufftComplex*>(ctx.scratch("hyena72_u_f", spectrum_bytes));
    auto* h_f = static_cast<cufftComplex*>(ctx.scratch("hyena72_h_f", spectrum_bytes));
    cudaStream_t s = ctx.stream();
    if (!u || !hp || !u_f || !h_f || !plans.make(n, local) ||
        cufftSetStream(plans.forward, s) != CUFFT_SUCCESS ||
        cufftSetStream(plans.inverse, s) != CUFFT_SUCCESS)
        return false;
    gather_padded<<<1024, 256, 0, s>>>(z, u, local, first, ls, length, n, ctx.world_size);
    pad_filters<<<1024, 256, 0, s>>>(h + first * taps, hp, local, taps, n);
    if (cufftExecR2C(plans.forward, u, u_f) != CUFFT_SUCCESS ||
        cufftExecR2C(plans.forward, hp, h_f) != CUFFT_SUCCESS)
        return false;
    scaled_product<<<1024, 256, 0, s>>>(u_f, h_f, local * bins, static_cast<float>(n));
    // The inverse goes into hp (the filters are no longer needed) so that u stays for the bias term.
    if (cufftExecC2R(plans.inverse, u_f, hp) != CUFFT_SUCCESS)
        return false;
    add_bias<<<1024, 256, 0, s>>>(hp, u, bias + first, y, local, length, n);
    return true;
}

__global__ void gate(Peers y, const bf16* x1, bf16* out, long long chans, long long ls, long long local,
                     long long length, int rank, int world) {
    const long long half = ls / 2;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < chans * ls;
         i += (long long)gridDim.x * blockDim.x) {
        const long long t = i / chans, c = i % chans;
        const long long g = chunk_at(2LL * rank + t / half, 2LL * world) * half + t % half;
        const float yv = __bfloat162float(y.p[c / local][(c % local) * length + g]);
        out[i] = __float2bfloat16(__bfloat162float(x1[c * ls + t]) * yv);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x1 = ctx.input(0);
    if (x1.dtype != pkbw::DType::BF16)
        return ctx.fail("this sample handles bf16");
    const int world = ctx.world_size, rank = ctx.rank;
    if (world > 8)
        return ctx.fail("this sample handles up to 8 ranks");
    const long long chans = x1.shape[1], ls = x1.shape[2], taps = ctx.input(3).shape[1],
                    local = chans / world, length = ls * world;
    if (chans % world != 0 || ls % 2 != 0)
        return ctx.fail("this sample needs W to divide the channels and an even local sequence");
    const pkbw::SymmetricMemory zs = ctx.symmetric("hyena72_z", chans * ls * sizeof(bf16));
    const pkbw::SymmetricMemory ys = ctx.symmetric("hyena72_y", local * length * sizeof(bf16));
    Peers zp{}, yp{};
    for (int r = 0; r < world; ++r) {
        zp.p[r] = static_cast<const bf16*>(zs.peers[r]);
        yp.p[r] = static_cast<const bf16*>(ys.peers[r]);
    }
    product<<<1024, 256, 0, ctx.stream()>>>(ctx.input(1).as<bf16>(), ctx.input(2).as<bf16>(),
                                            static_cast<bf16*>(zs.local), chans * ls);
    ctx.barrier();
    if (!convolve(ctx, zp, ctx.input(3).as<bf16>(), ctx.input(4).as<bf16>(), static_cast<bf16*>(ys.local),
                  local, rank * local, ls, length, taps))
        return ctx.fail("cuFFT failed (plan, scratch or execution)");
    ctx.barrier();
    gate<<<1024, 256, 0, ctx.stream()>>>(yp, x1.as<bf16>(), ctx.output(0).as<bf16>(), chans, ls, local,
                                         length, rank, world);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
