// Hand-written sample candidate (not LLM output)
// PKB 59 (x [B, H, Wd/W] float32 = this rank's width shard of a [B, H, Wd] field; fft over H with norm
// "ortho", all-to-all from width shards to H shards, fft over the width, the first Wd/2 + 1 bins:
// complex64 [B, H/W, Wd/2 + 1]), baseline: x widened to complex in a symmetric buffer, cuFFT C2C over H
// in place (one batch of Wd/W interleaved columns per b), scaled by 1/sqrt(H); a host barrier; one kernel
// gathers this rank's H rows of every rank's columns (whole rows of the width) from the peers, cuFFT C2C
// over the width, and one kernel scales the first Wd/2 + 1 bins by 1/sqrt(Wd) into the output.
#include "pkbw/solution.h"

#include <cmath>
#include <cufft.h>

namespace {

struct Peers {
    const cufftComplex* p[8];
};

__global__ void widen(const float* x, cufftComplex* c, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        c[i] = {x[i], 0.f};
}

__global__ void scale_all(cufftComplex* c, long long n, float s) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        c[i] = {c[i].x * s, c[i].y * s};
}

// rows [B, H/W, Wd]: column src·Wl + w of row (b, h) is source src's x1[b, rank·H/W + h, w].
__global__ void gather_rows(Peers x1, cufftComplex* rows, long long batch, long long height, long long local,
                            long long per_rank, int rank, int world) {
    const long long width = local * world, total = batch * per_rank * width;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long col = i % width, row = i / width, b = row / per_rank, h = row % per_rank;
        rows[i] = x1.p[col / local][(b * height + rank * per_rank + h) * local + col % local];
    }
}

__global__ void keep_bins(const cufftComplex* rows, cufftComplex* out, long long count, long long width,
                          long long bins, float s) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x) {
        const cufftComplex v = rows[(i / bins) * width + i % bins];
        out[i] = {v.x * s, v.y * s};
    }
}

// The two C2C plans, kept while the shape stays.
struct Plans {
    long long key[4] = {0, 0, 0, 0};
    cufftHandle columns = 0, widths = 0;
    bool ready = false;
    ~Plans() { release(); }
    void release() {
        if (ready) {
            cufftDestroy(columns);
            cufftDestroy(widths);
        }
        ready = false;
    }
    bool make(long long height, long long local, long long width, long long row_count) {
        if (ready && key[0] == height && key[1] == local && key[2] == width && key[3] == row_count)
            return true;
        release();
        if (cufftCreate(&columns) != CUFFT_SUCCESS)
            return false;
        if (cufftCreate(&widths) != CUFFT_SUCCESS) {
            cufftDestroy(columns);
            return false;
        }
        ready = true;
        long long h = height, w = width;
        size_t work = 0;
        const bool made = cufftMakePlanMany64(columns, 1, &h, &h, local, 1, &h, local, 1, CUFFT_C2C, local,
                                              &work) == CUFFT_SUCCESS &&
                          cufftMakePlanMany64(widths, 1, &w, &w, 1, width, &w, 1, width, CUFFT_C2C, row_count,
                                              &work) == CUFFT_SUCCESS;
        if (!made) {
            release();
            return false;
        }
        key[0] = height, key[1] = local, key[2] = width, key[3] = row_count;
        return true;
    }
};

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const int world = ctx.world_size, rank = ctx.rank;
    if (x.dtype != pkbw::DType::F32 || world > 8)
        return ctx.fail("this sample handles float32 x and up to 8 ranks");
    const long long batch = x.shape[0], height = x.shape[1], local = x.shape[2], width = local * world,
                    per_rank = height / world, bins = width / 2 + 1, count = batch * height * local;
    const pkbw::SymmetricMemory x1s = ctx.symmetric("rfft59_x1", count * sizeof(cufftComplex));
    auto* rows = static_cast<cufftComplex*>(ctx.scratch("rfft59_rows", count * sizeof(cufftComplex)));
    static Plans plans;
    cudaStream_t s = ctx.stream();
    if (!rows || !plans.make(height, local, width, batch * per_rank) ||
        cufftSetStream(plans.columns, s) != CUFFT_SUCCESS || cufftSetStream(plans.widths, s) != CUFFT_SUCCESS)
        return ctx.fail("cuFFT plan or scratch failed");
    auto* x1 = static_cast<cufftComplex*>(x1s.local);
    widen<<<1024, 256, 0, s>>>(x.as<float>(), x1, count);
    for (long long b = 0; b < batch; ++b)
        if (cufftExecC2C(plans.columns, x1 + b * height * local, x1 + b * height * local, CUFFT_FORWARD) !=
            CUFFT_SUCCESS)
            return ctx.fail("cuFFT over H failed");
    scale_all<<<1024, 256, 0, s>>>(x1, count, static_cast<float>(1.0 / std::sqrt(double(height))));
    ctx.barrier();

    Peers peers{};
    for (int r = 0; r < world; ++r)
        peers.p[r] = static_cast<const cufftComplex*>(x1s.peers[r]);
    gather_rows<<<1024, 256, 0, s>>>(peers, rows, batch, height, local, per_rank, rank, world);
    if (cufftExecC2C(plans.widths, rows, rows, CUFFT_FORWARD) != CUFFT_SUCCESS)
        return ctx.fail("cuFFT over the width failed");
    keep_bins<<<1024, 256, 0, s>>>(rows, ctx.output(0).as<cufftComplex>(), batch * per_rank * bins, width,
                                   bins, static_cast<float>(1.0 / std::sqrt(double(width))));
    ctx.barrier(); // peers may still read this rank's buffer
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
