// Hand-written sample candidate (not LLM output)
// PKB 68 (local_embedding_shard [S, E] bf16 = rows r·S .. r·S + S - 1 of a node table, input_node_ids [Q]
// int64, proj_matrix [E, E]; every id's row fetched from its owner min(id / S, W - 1), in query order,
// times proj_matrix: output [Q, E]), baseline: the ids copied into a symmetric buffer; a host barrier; one
// kernel per peer writes the rows this rank owns straight into that peer's symmetric row buffer at the
// queries' positions (peer pointers); a host barrier; cuBLAS multiplies the rows by the projection
// (bf16 in and out, fp32 accumulation).
#include "pkbw/solution.h"

#include <cublas_v2.h>

namespace {

// Rows of 16-byte words: rows[i] = table[id - rank·S] for each query i of `wanted` that this rank owns.
__global__ void answer(const long long* wanted, long long queries, const uint4* table, long long shard,
                       long long words, int rank, int world, uint4* rows, int* bad) {
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < queries * words;
         t += (long long)gridDim.x * blockDim.x) {
        const long long i = t / words, w = t % words, id = wanted[i];
        const long long owner = min(id / shard, (long long)(world - 1));
        if (owner != rank)
            continue;
        const long long row = id - rank * shard;
        if (row < 0 || row >= shard) {
            *bad = 1;
            continue;
        }
        rows[i * words + w] = table[row * words + w];
    }
}

cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t created = nullptr;
        cublasCreate(&created);
        return created;
    }();
    return h;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& table = ctx.input(0);
    const int world = ctx.world_size, rank = ctx.rank;
    const long long shard = table.shape[0], embed = table.shape[1], queries = ctx.input(1).shape[0];
    if (table.dtype != pkbw::DType::BF16 || (embed * 2) % 16 != 0)
        return ctx.fail("this sample handles bf16 rows of a multiple of 8 columns");
    const long long words = embed * 2 / 16;
    const pkbw::SymmetricMemory ids = ctx.symmetric("fetch68_ids", queries * sizeof(long long));
    const pkbw::SymmetricMemory rows = ctx.symmetric("fetch68_rows", queries * embed * 2);
    int* bad = static_cast<int*>(ctx.scratch("fetch68_bad", sizeof(int)));
    cudaStream_t s = ctx.stream();
    cudaMemsetAsync(bad, 0, sizeof(int), s);
    cudaMemcpyAsync(ids.local, ctx.input(1).data, queries * sizeof(long long), cudaMemcpyDeviceToDevice, s);
    ctx.barrier();
    for (int peer = 0; peer < world; ++peer)
        answer<<<1024, 256, 0, s>>>(static_cast<const long long*>(ids.peers[peer]), queries,
                                    static_cast<const uint4*>(table.data), shard, words, rank, world,
                                    static_cast<uint4*>(rows.peers[peer]), bad);
    ctx.barrier();
    const float alpha = 1.f, beta = 0.f;
    cublasSetStream(handle(), s);
    const cublasStatus_t st =
        cublasGemmEx(handle(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(embed), static_cast<int>(queries),
                     static_cast<int>(embed), &alpha, ctx.input(2).data, CUDA_R_16BF, static_cast<int>(embed),
                     rows.local, CUDA_R_16BF, static_cast<int>(embed), &beta, ctx.output(0).data, CUDA_R_16BF,
                     static_cast<int>(embed), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    int flag = 0;
    cudaMemcpyAsync(&flag, bad, sizeof(int), cudaMemcpyDeviceToHost, s);
    ctx.barrier(); // peers write into this rank's row buffer again in their next call
    if (st != CUBLAS_STATUS_SUCCESS)
        return ctx.fail(cublasGetStatusString(st));
    if (flag)
        return ctx.fail("an id outside its owner's shard");
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
