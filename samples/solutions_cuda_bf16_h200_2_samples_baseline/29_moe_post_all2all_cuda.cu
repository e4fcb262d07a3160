// Hand-written sample candidate (not LLM output)
// PKB 29 (expert outputs regrouped back to source-rank order, all_to_all_single back, each row
// weighted by its token's routing weight for the row's expert and scatter-added into [M, N]),
// baseline: chunk copies into a symmetric buffer, host barrier, one copy per peer into a staging
// buffer, a dense-weights kernel, a one-thread kernel for the per-row weights in routing-map order,
// then a zeroed output and atomicAdd in the dtype (two adds per token: the order does not matter).
#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector>

namespace {

template <class T>
__device__ float as_float(T v) {
    return static_cast<float>(v);
}
template <>
__device__ float as_float<__nv_bfloat16>(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
template <>
__device__ float as_float<__half>(__half v) {
    return __half2float(v);
}

template <class T>
__global__ void dense_weights(const T* w, const long long* selected, long long tokens, long long topk,
                              long long experts, T* dense) {
    for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < tokens;
         t += static_cast<long long>(gridDim.x) * blockDim.x) {
        for (long long e = 0; e < experts; ++e)
            dense[t * experts + e] = T(0.f);
        for (long long j = 0; j < topk; ++j) {
            T& slot = dense[t * experts + selected[t * topk + j]];
            slot = T(as_float(slot) + as_float(w[t * topk + j]));
        }
    }
}

template <class T>
__global__ void row_weights(const unsigned char* map, const T* dense, long long experts, long long tokens,
                            long long capacity, T* out, long long* count) {
    long long i = 0;
    for (long long e = 0; e < experts; ++e)
        for (long long t = 0; t < tokens; ++t)
            if (map[e * tokens + t]) {
                if (i < capacity)
                    out[i] = dense[t * experts + e];
                ++i;
            }
    *count = i;
}

template <class T>
__global__ void combine(const T* rows, const T* weight, const long long* perm, long long count, long long n,
                        T* out) {
    for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; k < count * n;
         k += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long i = k / n, c = k % n;
        const T v = T(as_float(rows[k]) * as_float(weight[i]));
        atomicAdd(&out[perm[i] * n + c], v);
    }
}

unsigned blocks_for(long long n) {
    return static_cast<unsigned>(n / 256 + 1 > 4096 ? 4096 : n / 256 + 1);
}

template <class T>
int weigh_and_add(const pkbw::Context& ctx, const void* back, long long back_rows) {
    const pkbw::TensorView& out = ctx.output(0);
    const long long tokens = out.shape[0], n = out.shape[1];
    const long long topk = ctx.input(1).shape[1], experts = ctx.input(4).shape[0];
    const long long count = ctx.input(5).numel();
    T* dense = static_cast<T*>(ctx.scratch("moe29_dense", sizeof(T) * tokens * experts));
    T* weight = static_cast<T*>(ctx.scratch("moe29_weight", sizeof(T) * (back_rows + 1)));
    long long* routed = static_cast<long long*>(ctx.scratch("moe29_routed", sizeof(long long)));
    dense_weights<T><<<blocks_for(tokens), 256, 0, ctx.stream()>>>(
        ctx.input(1).as<const T>(), ctx.input(2).as<const long long>(), tokens, topk, experts, dense);
    row_weights<T><<<1, 1, 0, ctx.stream()>>>(ctx.input(4).as<const unsigned char>(), dense, experts, tokens,
                                              back_rows, weight, routed);
    long long host_routed = 0;
    cudaMemcpyAsync(&host_routed, routed, sizeof host_routed, cudaMemcpyDeviceToHost, ctx.stream());
    cudaStreamSynchronize(ctx.stream());
    if (host_routed != back_rows || count > back_rows)
        return ctx.fail("routing_map, the permutation and the returned rows disagree");
    cudaMemsetAsync(out.data, 0, out.nbytes(), ctx.stream());
    combine<T><<<blocks_for(count * n), 256, 0, ctx.stream()>>>(
        static_cast<const T*>(back), weight, ctx.input(5).as<const long long>(), count, n, out.as<T>());
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& rows_in = ctx.input(0);
    std::vector<long long> counts(static_cast<std::size_t>(ctx.input(3).numel()));
    cudaMemcpyAsync(counts.data(), ctx.input(3).data, ctx.input(3).nbytes(), cudaMemcpyDeviceToHost,
                    ctx.stream());
    cudaStreamSynchronize(ctx.stream());
    const int world = ctx.world_size, me = ctx.rank;
    const long long rows = rows_in.shape[0], experts = ctx.input(4).shape[0], local = experts / world;
    std::vector<double> send(world), recv(world);
    if (ctx.param_list("output_splits", send.data(), world) != world ||
        ctx.param_list("input_splits", recv.data(), world) != world) {
        return ctx.fail("need input_splits and output_splits with one entry per rank");
    }
    std::vector<long long> start(experts);
    long long at = 0;
    for (long long l = 0; l < local; ++l)
        for (int w = 0; w < world; ++w) {
            start[l * world + w] = at;
            at += counts[w * local + l];
        }
    if (at != rows)
        return ctx.fail("the counts do not sum to the expert output rows");
    const long long row_bytes = static_cast<long long>(rows_in.nbytes()) / rows;
    const pkbw::SymmetricMemory shared =
        ctx.symmetric("moe29_baseline", static_cast<std::size_t>(rows * row_bytes));
    char* dst = static_cast<char*>(shared.local);
    for (int w = 0; w < world; ++w)
        for (long long l = 0; l < local; ++l) {
            const long long bytes = counts[w * local + l] * row_bytes;
            if (bytes > 0)
                cudaMemcpyAsync(dst,
                                static_cast<const char*>(rows_in.data) + start[l * world + w] * row_bytes,
                                bytes, cudaMemcpyDeviceToDevice, ctx.stream());
            dst += bytes;
        }
    ctx.barrier();
    long long from = 0, total = 0;
    for (int p = 0; p < me; ++p)
        from += static_cast<long long>(send[p]);
    for (int p = 0; p < world; ++p)
        total += static_cast<long long>(recv[p]);
    char* back =
        static_cast<char*>(ctx.scratch("moe29_back", static_cast<std::size_t>(total * row_bytes + 1)));
    long long off = 0;
    for (int p = 0; p < world; ++p) {
        const long long bytes = static_cast<long long>(recv[p]) * row_bytes;
        if (bytes > 0)
            cudaMemcpyAsync(back + off, static_cast<const char*>(shared.peers[p]) + from * row_bytes, bytes,
                            cudaMemcpyDeviceToDevice, ctx.stream());
        off += bytes;
    }
    ctx.barrier();
    int rc = 0;
    switch (rows_in.dtype) {
    case pkbw::DType::BF16:
        rc = weigh_and_add<__nv_bfloat16>(ctx, back, total);
        break;
    case pkbw::DType::F16:
        rc = weigh_and_add<__half>(ctx, back, total);
        break;
    case pkbw::DType::F32:
        rc = weigh_and_add<float>(ctx, back, total);
        break;
    default:
        return ctx.fail("dtype must be bf16, f16 or f32");
    }
    if (rc != 0)
        return rc;
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
