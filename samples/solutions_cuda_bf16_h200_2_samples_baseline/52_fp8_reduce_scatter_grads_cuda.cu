// Hand-written sample candidate (not LLM output)
// PKB 52 (absmax into a rolled bf16 amax history, scale = max(history)/448, e4m3 round trip of the
// bf16 grads, reduce-scatter in bf16 / W), baseline: an absmax kernel (atomicMax on the float bits:
// magnitudes are non-negative, so their bit patterns order like the values), a one-thread history
// kernel, a round-trip kernel (the hardware e4m3 conversion without saturation) into a symmetric
// buffer, a host barrier, a kernel summing this rank's chunk over the peers, a last host barrier.
#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

namespace {

__global__ void absmax(const __nv_bfloat16* x, long long n, unsigned* bits) {
    float m = 0.f;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x)
        m = fmaxf(m, fabsf(__bfloat162float(x[i])));
    for (int step = 16; step > 0; step >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, step));
    if (threadIdx.x % 32 == 0)
        atomicMax(bits, __float_as_uint(m));
}

__global__ void history(const __nv_bfloat16* in, __nv_bfloat16* out, int len, const unsigned* bits,
                        float* scale) {
    float largest = 0.f;
    for (int i = 0; i < len; ++i) {
        out[i] = i + 1 < len ? in[i + 1] : __float2bfloat16(__uint_as_float(*bits));
        largest = fmaxf(largest, __bfloat162float(out[i]));
    }
    *scale = fmaxf(largest, 1e-12f) * (1.0f / 448.0f);
}

__global__ void round_trip(const __nv_bfloat16* x, long long n, const float* scale_ptr, __nv_bfloat16* out) {
    const float scale = *scale_ptr;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const __nv_fp8_storage_t q =
            __nv_cvt_float_to_fp8(__bfloat162float(x[i]) / scale, __NV_NOSAT, __NV_E4M3);
        const __half_raw h = __nv_cvt_fp8_to_halfraw(q, __NV_E4M3);
        out[i] = __float2bfloat16(__half2float(__half(h)) * scale);
    }
}

__global__ void reduce_chunk(void* const* peers, int world, long long offset, __nv_bfloat16* out,
                             long long n) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        float s = 0.f;
        for (int r = 0; r < world; ++r)
            s += __bfloat162float(static_cast<const __nv_bfloat16*>(peers[r])[offset + i]);
        out[i] = __float2bfloat16(__bfloat162float(__float2bfloat16(s)) / static_cast<float>(world));
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& grads = ctx.input(0);
    if (grads.dtype != pkbw::DType::BF16) {
        return ctx.fail("this sample handles bf16 grads");
    }
    const long long n = grads.numel(), chunk = ctx.output(0).numel();
    auto* work = static_cast<unsigned*>(ctx.scratch("fp8rs_work", 2 * sizeof(unsigned)));
    cudaMemsetAsync(work, 0, sizeof(unsigned), ctx.stream());
    const unsigned blocks = static_cast<unsigned>(n / 256 + 1 > 1024 ? 1024 : n / 256 + 1);
    absmax<<<blocks, 256, 0, ctx.stream()>>>(grads.as<const __nv_bfloat16>(), n, work);
    float* scale = reinterpret_cast<float*>(work + 1);
    history<<<1, 1, 0, ctx.stream()>>>(ctx.input(1).as<const __nv_bfloat16>(),
                                       ctx.output(1).as<__nv_bfloat16>(),
                                       static_cast<int>(ctx.input(1).numel()), work, scale);
    const pkbw::SymmetricMemory recon = ctx.symmetric("fp8rs_baseline", grads.nbytes());
    round_trip<<<blocks, 256, 0, ctx.stream()>>>(grads.as<const __nv_bfloat16>(), n, scale,
                                                 static_cast<__nv_bfloat16*>(recon.local));
    ctx.barrier();
    reduce_chunk<<<blocks, 256, 0, ctx.stream()>>>(recon.peers_device, ctx.world_size, ctx.rank * chunk,
                                                   ctx.output(0).as<__nv_bfloat16>(), chunk);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
