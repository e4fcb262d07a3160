// Hand-written sample candidate (not LLM output)
// PKB 60 (x [B, C, H/W, Wd/2 + 1] complex64 = this rank's H rows of the rfft2 spectrum of a real field;
// extended to the width Wd by Hermitian symmetry, ifft over the width with norm "ortho", all-to-all from H
// shards to width shards, ifft over H, the real part: float32 [B, C, H, Wd/W]), baseline: x copied into a
// symmetric buffer; a host barrier; one kernel builds this rank's full-width rows from the peers'
// spectra (columns k >= Wd/2 + 1 are conj(X[(H - h) mod H, Wd - k])) into a second symmetric buffer,
// cuFFT C2C inverse over the width in place, scaled by 1/sqrt(Wd); a barrier; one kernel gathers this
// rank's columns of every rank's rows, cuFFT C2C inverse over H (one batch of Wd/W interleaved columns per
// field), and one kernel writes the real part scaled by 1/sqrt(H).
#include "pkbw/solution.h"

#include <cmath>
#include <cufft.h>

namespace {

struct Peers {
    const cufftComplex* p[8];
};

__global__ void full_rows(Peers spectra, cufftComplex* rows, long long fields, long long per_rank,
                          long long bins, long long width, int rank, int world) {
    const long long height = per_rank * world, total = fields * per_rank * width;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long k = i % width, h = (i / width) % per_rank, f = i / (width * per_rank);
        const long long row = rank * per_rank + h;
        const bool mirrored = k >= bins;
        const long long src_row = mirrored ? (height - row) % height : row, col = mirrored ? width - k : k;
        const cufftComplex v =
            spectra.p[src_row / per_rank][(f * per_rank + src_row % per_rank) * bins + col];
        rows[i] = mirrored ? cufftComplex{v.x, -v.y} : v;
    }
}

__global__ void scale_all(cufftComplex* c, long long n, float s) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        c[i] = {c[i].x * s, c[i].y * s};
}

// columns [F, H, Wd/W]: row r of field f is source (r / per_rank)'s x1[f, r % per_rank, rank·local + w].
__global__ void gather_columns(Peers x1, cufftComplex* cols, long long fields, long long per_rank,
                               long long local, int rank, int world) {
    const long long height = per_rank * world, width = local * world, total = fields * height * local;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long w = i % local, r = (i / local) % height, f = i / (local * height);
        cols[i] = x1.p[r / per_rank][(f * per_rank + r % per_rank) * width + rank * local + w];
    }
}

__global__ void real_scaled(const cufftComplex* c, float* out, long long n, float s) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = c[i].x * s;
}

// The two C2C plans, kept while the shape stays.
struct Plans {
    long long key[4] = {0, 0, 0, 0};
    cufftHandle rows = 0, columns = 0;
    bool ready = false;
    ~Plans() { release(); }
    void release() {
        if (ready) {
            cufftDestroy(rows);
            cufftDestroy(columns);
        }
        ready = false;
    }
    bool make(long long width, long long row_count, long long height, long long local) {
        if (ready && key[0] == width && key[1] == row_count && key[2] == height && key[3] == local)
            return true;
        release();
        if (cufftCreate(&rows) != CUFFT_SUCCESS)
            return false;
        if (cufftCreate(&columns) != CUFFT_SUCCESS) {
            cufftDestroy(rows);
            return false;
        }
        ready = true;
        long long w = width, h = height;
        size_t work = 0;
        const bool made = cufftMakePlanMany64(rows, 1, &w, &w, 1, width, &w, 1, width, CUFFT_C2C, row_count,
                                              &work) == CUFFT_SUCCESS &&
                          cufftMakePlanMany64(columns, 1, &h, &h, local, 1, &h, local, 1, CUFFT_C2C, local,
                                              &work) == CUFFT_SUCCESS;
        if (!made) {
            release();
            return false;
        }
        key[0] = width, key[1] = row_count, key[2] = height, key[3] = local;
        return true;
    }
};

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& output = ctx.output(0);
    const int world = ctx.world_size, rank = ctx.rank;
    if (x.dtype != pkbw::DType::C64 || output.dtype != pkbw::DType::F32 || world > 8)
        return ctx.fail("this sample handles complex64 x, a float32 output and up to 8 ranks");
    const long long fields = x.shape[0] * x.shape[1], per_rank = x.shape[2], bins = x.shape[3],
                    height = per_rank * world, local = output.shape[3], width = local * world,
                    count = fields * per_rank * width;
    const size_t spectrum_bytes = fields * per_rank * bins * sizeof(cufftComplex);
    const pkbw::SymmetricMemory spectra = ctx.symmetric("irfft60_spectrum", spectrum_bytes);
    const pkbw::SymmetricMemory x1s = ctx.symmetric("irfft60_x1", count * sizeof(cufftComplex));
    auto* cols = static_cast<cufftComplex*>(ctx.scratch("irfft60_columns", count * sizeof(cufftComplex)));
    static Plans plans;
    cudaStream_t s = ctx.stream();
    if (!cols || !plans.make(width, fields * per_rank, height, local) ||
        cufftSetStream(plans.rows, s) != CUFFT_SUCCESS || cufftSetStream(plans.columns, s) != CUFFT_SUCCESS)
        return ctx.fail("cuFFT plan or scratch failed");
    cudaMemcpyAsync(spectra.local, x.data, spectrum_bytes, cudaMemcpyDeviceToDevice, s);
    ctx.barrier();

    Peers peers{};
    for (int r = 0; r < world; ++r)
        peers.p[r] = static_cast<const cufftComplex*>(spectra.peers[r]);
    auto* x1 = static_cast<cufftComplex*>(x1s.local);
    full_rows<<<1024, 256, 0, s>>>(peers, x1, fields, per_rank, bins, width, rank, world);
    if (cufftExecC2C(plans.rows, x1, x1, CUFFT_INVERSE) != CUFFT_SUCCESS)
        return ctx.fail("cuFFT over the width failed");
    scale_all<<<1024, 256, 0, s>>>(x1, count, static_cast<float>(1.0 / std::sqrt(double(width))));
    ctx.barrier();

    for (int r = 0; r < world; ++r)
        peers.p[r] = static_cast<const cufftComplex*>(x1s.peers[r]);
    gather_columns<<<1024, 256, 0, s>>>(peers, cols, fields, per_rank, local, rank, world);
    for (long long f = 0; f < fields; ++f)
        if (cufftExecC2C(plans.columns, cols + f * height * local, cols + f * height * local,
                         CUFFT_INVERSE) != CUFFT_SUCCESS)
            return ctx.fail("cuFFT over H failed");
    real_scaled<<<1024, 256, 0, s>>>(cols, output.as<float>(), count,
                                     static_cast<float>(1.0 / std::sqrt(double(height))));
    ctx.barrier(); // peers may still read this rank's buffers
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
