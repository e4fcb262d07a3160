// Reference for PKB problem 20: an elementwise y * s kernel into fp32 scratch, then an all-to-all of
// equal chunks with grouped ncclSend/ncclRecv.
#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

__device__ float to_float(float v) {
    return v;
}
__device__ float to_float(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
__device__ float to_float(__half v) {
    return __half2float(v);
}

template <class T>
__global__ void dequantize(const T* y, const T* s, float* x, long long count, int block) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        x[i] = to_float(y[i]) * to_float(s[i / block]);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& y = ctx.input(0);
    const pkbw::TensorView& s = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const int block = static_cast<int>(ctx.param("block_size", 128));
    const long long count = y.numel();
    float* x = static_cast<float*>(ctx.scratch("fp8dq_x", out.nbytes()));
    const int grid = static_cast<int>(count / 256 + 1 < 8192 ? count / 256 + 1 : 8192);
    switch (y.dtype) {
    case pkbw::DType::BF16:
        dequantize<<<grid, 256, 0, ctx.stream()>>>(y.as<const __nv_bfloat16>(), s.as<const __nv_bfloat16>(),
                                                   x, count, block);
        break;
    case pkbw::DType::F16:
        dequantize<<<grid, 256, 0, ctx.stream()>>>(y.as<const __half>(), s.as<const __half>(), x, count,
                                                   block);
        break;
    case pkbw::DType::F32:
        dequantize<<<grid, 256, 0, ctx.stream()>>>(y.as<const float>(), s.as<const float>(), x, count, block);
        break;
    default:
        return ctx.fail("20_blocked_fp8_dequantize reference: dtype must be bf16, f16 or f32");
    }
    const std::size_t chunk = out.nbytes() / ctx.world_size;
    char* recv = static_cast<char*>(out.data);
    ncclResult_t rc = ncclGroupStart();
    for (int r = 0; r < ctx.world_size && rc == ncclSuccess; ++r) {
        rc = ncclSend(reinterpret_cast<const char*>(x) + r * chunk, chunk, ncclUint8, r, ctx.nccl(),
                      ctx.stream());
        if (rc == ncclSuccess) {
            rc = ncclRecv(recv + r * chunk, chunk, ncclUint8, r, ctx.nccl(), ctx.stream());
        }
    }
    const ncclResult_t end = ncclGroupEnd();
    if (rc == ncclSuccess) {
        rc = end;
    }
    if (rc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc));
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
