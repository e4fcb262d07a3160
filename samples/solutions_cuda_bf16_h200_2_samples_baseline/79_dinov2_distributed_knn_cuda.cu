// Hand-written sample candidate (not LLM output)
// PKB 79 (rank o returns the top-k similarities of its queries [Q, F] against every rank's train shard
// [F, T], with the train labels, descending, ties by the lower global train index rank*T + j), baseline:
// every rank's queries through a symmetric buffer; each rank scores every owner's queries against its own
// shard with one cublasGemmEx per owner (bf16 in, fp32 accumulation, output in the dtype, as torch's
// matmul); the scores go to a symmetric buffer; after a host barrier each owner runs one block per query
// that reads its row from every peer and picks the k best by repeated block-wide argmax (lower global
// index first among equal values). bf16 and f32.
#include "pkbw/solution.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>

namespace {

__device__ float load(const float* p, long long i) {
    return p[i];
}
__device__ float load(const __nv_bfloat16* p, long long i) {
    return __bfloat162float(p[i]);
}

constexpr int kThreads = 256;

// Block q: the best k over every peer's row q of this owner ([W*Q, T] scores per peer, owner-major rows).
template <class T>
__global__ void select_topk(const void* const* scores, const void* const* labels, int world, int owner,
                            long long queries, long long train, long long k, float* used_mask_scratch,
                            T* out_values, long long* out_labels) {
    const long long q = blockIdx.x, width = world * train;
    float* taken = used_mask_scratch + q * width; // 1 once chosen
    for (long long c = threadIdx.x; c < width; c += blockDim.x)
        taken[c] = 0.0f;
    __shared__ float best_value[kThreads];
    __shared__ long long best_index[kThreads];
    __syncthreads();
    for (long long i = 0; i < k; ++i) {
        float value = -INFINITY;
        long long index = -1;
        for (long long c = threadIdx.x; c < width; c += blockDim.x) {
            const int p = static_cast<int>(c / train);
            const float v = load(static_cast<const T*>(scores[p]), (owner * queries + q) * train + c % train);
            if (taken[c] == 0.0f && (index < 0 || v > value)) { // c ascends: the first of equals stays
                value = v;
                index = c;
            }
        }
        best_value[threadIdx.x] = value;
        best_index[threadIdx.x] = index;
        __syncthreads();
        for (int s = kThreads / 2; s > 0; s /= 2) {
            if (threadIdx.x < s) {
                const float v = best_value[threadIdx.x + s];
                const long long c = best_index[threadIdx.x + s];
                const long long mine = best_index[threadIdx.x];
                if (c >= 0 &&
                    (mine < 0 || v > best_value[threadIdx.x] || (v == best_value[threadIdx.x] && c < mine))) {
                    best_value[threadIdx.x] = v;
                    best_index[threadIdx.x] = c;
                }
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            const long long c = best_index[0];
            const int p = static_cast<int>(c / train);
            taken[c] = 1.0f;
            out_values[q * k + i] =
                static_cast<const T*>(scores[p])[(owner * queries + q) * train + c % train];
            out_labels[q * k + i] = static_cast<const long long*>(labels[p])[c % train];
        }
        __syncthreads();
    }
}

template <class T>
int run(const pkbw::Context& ctx, cudaDataType_t type) {
    static cublasHandle_t handle = nullptr;
    if (handle == nullptr && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
        return ctx.fail("cublasCreate failed");
    cublasSetStream(handle, ctx.stream());
    const pkbw::TensorView& test = ctx.input(0);
    const pkbw::TensorView& train_t = ctx.input(1);
    const int world = ctx.world_size;
    const long long queries = test.shape[0], features = test.shape[1], train = train_t.shape[1];
    const long long k = ctx.output(0).shape[1];
    const pkbw::SymmetricMemory q_sym = ctx.symmetric("knn79_queries", test.nbytes());
    const pkbw::SymmetricMemory s_sym = ctx.symmetric("knn79_scores", sizeof(T) * world * queries * train);
    const pkbw::SymmetricMemory l_sym = ctx.symmetric("knn79_labels", sizeof(long long) * train);
    cudaMemcpyAsync(q_sym.local, test.data, test.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    cudaMemcpyAsync(l_sym.local, ctx.input(2).data, sizeof(long long) * train, cudaMemcpyDeviceToDevice,
                    ctx.stream());
    ctx.barrier();
    const float one = 1.0f, zero = 0.0f;
    for (int owner = 0; owner < world; ++owner) {
        // Row-major S[Q, T] = Q_o[Q, F] . train_T[F, T] is column-major S^T = train_T^T . Q_o^T.
        if (cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(train), static_cast<int>(queries),
                         static_cast<int>(features), &one, train_t.data, type, static_cast<int>(train),
                         q_sym.peers[owner], type, static_cast<int>(features), &zero,
                         static_cast<T*>(s_sym.local) + owner * queries * train, type,
                         static_cast<int>(train), CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
            return ctx.fail("cublasGemmEx failed");
    }
    ctx.barrier(); // every rank's scores for every owner are ready
    float* taken = static_cast<float*>(ctx.scratch("knn79_taken", sizeof(float) * queries * world * train));
    select_topk<T><<<static_cast<unsigned>(queries), kThreads, 0, ctx.stream()>>>(
        s_sym.peers_device, l_sym.peers_device, world, ctx.rank, queries, train, k, taken,
        ctx.output(0).as<T>(), ctx.output(1).as<long long>());
    ctx.barrier(); // nobody overwrites the scores while a peer still reads them
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    switch (ctx.input(0).dtype) {
    case pkbw::DType::BF16:
        return run<__nv_bfloat16>(ctx, CUDA_R_16BF);
    case pkbw::DType::F32:
        return run<float>(ctx, CUDA_R_32F);
    default:
        return ctx.fail("this sample handles bf16 and f32");
    }
}
