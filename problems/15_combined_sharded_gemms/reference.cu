// Reference for PKB problem 15, following PKB's data flow: ncclAllGather of the x shards, a permute
// into x [Mr, H], GEMM 1 over all rows (as PKB), SiLU in place, GEMM 2 on this rank's row block
// written into a zeroed [Mr, H] buffer, ncclReduceScatter (sum) of that buffer.
#include "pkbw/solution.h"

#include <cublas_v2.h>
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
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) {
    return v;
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
    return __float2bfloat16(v);
}
template <>
__device__ __half from_float<__half>(float v) {
    return __float2half(v);
}

bool cuda_type(pkbw::DType dtype, cudaDataType_t& type) {
    switch (dtype) {
    case pkbw::DType::BF16:
        type = CUDA_R_16BF;
        return true;
    case pkbw::DType::F16:
        type = CUDA_R_16F;
        return true;
    case pkbw::DType::F32:
        type = CUDA_R_32F;
        return true;
    default:
        return false;
    }
}

// One handle per process (each rank is its own process). Deliberately never destroyed: destroying
// it from a static destructor can run after the CUDA context is gone.
cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t created = nullptr;
        cublasCreate(&created);
        return created;
    }();
    return h;
}

// Row-major C[m, n] = A[m, k] · B[k, n] with fp32 accumulation; as column-major that is
// Cᵀ = Bᵀ·Aᵀ, so the operands are swapped and nothing is transposed.
cublasStatus_t gemm_rm(cudaStream_t stream, cudaDataType_t type, const void* a, const void* b, void* c,
                       long long m, long long n, long long k) {
    const float alpha = 1.f, beta = 0.f;
    cublasSetStream(handle(), stream);
    return cublasGemmEx(handle(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                        static_cast<int>(k), &alpha, b, type, static_cast<int>(n), a, type,
                        static_cast<int>(k), &beta, c, type, static_cast<int>(n), CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT);
}

// buf[r][row][j] -> out[row][r * cols + j]
template <class T>
__global__ void concat_columns(const T* buf, T* out, long long rows, long long cols, int world) {
    const long long total = rows * cols * world;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long r = i / (rows * cols);
        const long long row = (i / cols) % rows;
        const long long j = i % cols;
        out[row * cols * world + r * cols + j] = buf[i];
    }
}

template <class T>
__global__ void silu_inplace(T* a, long long count) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const float v = to_float(a[i]);
        a[i] = from_float<T>(v / (1.0f + expf(-v)));
    }
}

int grid_for(long long total) {
    return static_cast<int>(total / 256 + 1 < 8192 ? total / 256 + 1 : 8192);
}

template <class T>
int run(const pkbw::Context& ctx, cudaDataType_t type) {
    const pkbw::TensorView& x_local = ctx.input(0);
    const pkbw::TensorView& w1 = ctx.input(1);
    const pkbw::TensorView& w2 = ctx.input(2);
    const pkbw::TensorView& out = ctx.output(0);
    const int world = ctx.world_size;
    const long long rows = x_local.shape[0], hl = x_local.shape[1], hidden = w1.shape[0], f = w1.shape[1];
    const long long rows_local = rows / world;
    T* gathered = static_cast<T*>(ctx.scratch("csg_gathered", x_local.nbytes() * world));
    T* x = static_cast<T*>(ctx.scratch("csg_x", x_local.nbytes() * world));
    T* a = static_cast<T*>(ctx.scratch("csg_a", static_cast<std::size_t>(rows * f) * sizeof(T)));
    T* buf = static_cast<T*>(ctx.scratch("csg_buf", static_cast<std::size_t>(rows * hidden) * sizeof(T)));
    ncclResult_t rc =
        ncclAllGather(x_local.data, gathered, x_local.nbytes(), ncclUint8, ctx.nccl(), ctx.stream());
    if (rc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc));
    }
    concat_columns<T><<<grid_for(rows * hidden), 256, 0, ctx.stream()>>>(gathered, x, rows, hl, world);
    cublasStatus_t st = gemm_rm(ctx.stream(), type, x, w1.data, a, rows, f, hidden);
    if (st != CUBLAS_STATUS_SUCCESS) {
        return ctx.fail(cublasGetStatusString(st));
    }
    silu_inplace<T><<<grid_for(rows * f), 256, 0, ctx.stream()>>>(a, rows * f);
    cudaMemsetAsync(buf, 0, static_cast<std::size_t>(rows * hidden) * sizeof(T), ctx.stream());
    const long long first = ctx.rank * rows_local;
    st = gemm_rm(ctx.stream(), type, a + first * f, w2.data, buf + first * hidden, rows_local, hidden, f);
    if (st != CUBLAS_STATUS_SUCCESS) {
        return ctx.fail(cublasGetStatusString(st));
    }
    rc = ncclReduceScatter(buf, out.data, static_cast<size_t>(out.numel()), pkbw::nccl_dtype(out.dtype),
                           ncclSum, ctx.nccl(), ctx.stream());
    return rc == ncclSuccess ? 0 : ctx.fail(ncclGetErrorString(rc));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    cudaDataType_t type;
    if (!cuda_type(ctx.input(0).dtype, type)) {
        return ctx.fail("15_combined_sharded_gemms reference: dtype must be bf16, f16 or f32");
    }
    int rc = 0;
    switch (ctx.input(0).dtype) {
    case pkbw::DType::BF16:
        rc = run<__nv_bfloat16>(ctx, type);
        break;
    case pkbw::DType::F16:
        rc = run<__half>(ctx, type);
        break;
    default:
        rc = run<float>(ctx, type);
        break;
    }
    if (rc != 0) {
        return rc;
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
