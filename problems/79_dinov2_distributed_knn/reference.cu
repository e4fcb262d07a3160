// Reference for PKB problem 79: every rank's queries at once (ncclAllGather in place of PKB's W
// broadcasts), then per owner the similarity GEMM of its queries with this rank's train shard (cuBLAS as
// torch calls it: one [Q, F]·[F, T] per owner, as PKB's loop does), the top-k of every row
// (tk::segmented_topk: ties by the lower column), the candidates with their labels to their owners in one
// all-to-all (PKB's W gathers), and the owner's top-k of the W·k candidates in rank order.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/sort.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

namespace tk = pkbw::tk;

// Column c of row r in a row-blocked layout: [blocks][rows][block] (the received candidates, block = k),
// or plain [rows][width] when block is the row's width (c / block = 0).
__device__ __forceinline__ long long blocked_at(long long rows, long long block, long long r, long long c) {
    return ((c / block) * rows + r) * block + c % block;
}

// keys[r, c] = src at (r, c), as float: the sort keys of tk::segmented_topk (exact for bf16, f16, f32).
template <class T>
__global__ void widen(const T* src, long long rows, long long width, long long block, float* keys) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < rows * width; i += PKBW_GRID_STRIDE_STEP) {
        keys[i] = tk::to_float(src[blocked_at(rows, block, i / width, i % width)]);
    }
}

// out[r, i] = values and labels at column chosen[r, i] of row r; labels_shared: one label per column.
template <class T>
__global__ void pick(const T* values, const long long* labels, bool labels_shared, long long rows,
                     long long block, const long long* chosen, long long k, T* out_values,
                     long long* out_labels) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < rows * k; i += PKBW_GRID_STRIDE_STEP) {
        const long long r = i / k, c = chosen[i];
        const long long at = blocked_at(rows, block, r, c);
        out_values[i] = values[at];
        out_labels[i] = labels[labels_shared ? c : at];
    }
}

struct Dims {
    long long queries, features, train, k;
    int world;
};

template <class T>
int knn(const pkbw::Context& ctx, const Dims& d) {
    const long long rows = d.queries * d.world; // every owner's queries, owner-major
    const std::size_t elem = sizeof(T);
    T* queries = static_cast<T*>(ctx.scratch("knn79_queries", elem * rows * d.features));
    T* sims = static_cast<T*>(ctx.scratch("knn79_sims", elem * rows * d.train));
    float* keys = static_cast<float*>(ctx.scratch("knn79_keys", sizeof(float) * rows * d.train));
    long long* chosen = static_cast<long long*>(ctx.scratch("knn79_chosen", sizeof(long long) * rows * d.k));
    T* send_values = static_cast<T*>(ctx.scratch("knn79_send_values", elem * rows * d.k));
    long long* send_labels =
        static_cast<long long*>(ctx.scratch("knn79_send_labels", sizeof(long long) * rows * d.k));
    T* recv_values = static_cast<T*>(ctx.scratch("knn79_recv_values", elem * rows * d.k));
    long long* recv_labels =
        static_cast<long long*>(ctx.scratch("knn79_recv_labels", sizeof(long long) * rows * d.k));
    PKBW_CHECK(ctx, ncclAllGather(ctx.input(0).data, queries,
                                  static_cast<std::size_t>(d.queries * d.features) * elem, ncclUint8,
                                  ctx.nccl(), ctx.stream()));
    for (int owner = 0; owner < d.world; ++owner) {
        PKBW_TRY(tk::matmul(ctx, ctx.input(0).dtype, d.queries, d.train, d.features,
                            queries + owner * d.queries * d.features, ctx.input(1).data,
                            sims + owner * d.queries * d.train));
    }
    widen<T><<<tk::grid_for(rows * d.train), 256, 0, ctx.stream()>>>(sims, rows, d.train, d.train, keys);
    PKBW_CHECK(ctx, cudaGetLastError());
    PKBW_TRY(tk::segmented_topk(ctx, keys, rows, d.train, d.k, chosen));
    pick<T><<<tk::grid_for(rows * d.k), 256, 0, ctx.stream()>>>(
        sims, ctx.input(2).as<const long long>(), true, rows, d.train, chosen, d.k, send_values, send_labels);
    PKBW_CHECK(ctx, cudaGetLastError());
    // Owner o's block of rows goes to rank o; what arrives is [W][Q][k], peer p's candidates in block p.
    PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), send_values, recv_values, elem * d.queries * d.k));
    PKBW_TRY(tk::all_to_all(ctx, ctx.nccl(), send_labels, recv_labels, sizeof(long long) * d.queries * d.k));
    const long long width = d.k * d.world; // PKB's cat along dim 1: column p*k + j is peer p's j-th
    widen<T>
        <<<tk::grid_for(d.queries * width), 256, 0, ctx.stream()>>>(recv_values, d.queries, width, d.k, keys);
    PKBW_CHECK(ctx, cudaGetLastError());
    PKBW_TRY(tk::segmented_topk(ctx, keys, d.queries, width, d.k, chosen));
    pick<T><<<tk::grid_for(d.queries * d.k), 256, 0, ctx.stream()>>>(
        recv_values, recv_labels, false, d.queries, d.k, chosen, d.k, ctx.output(0).as<T>(),
        ctx.output(1).as<long long>());
    return tk::finish(ctx);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& test = ctx.input(0);
    const pkbw::TensorView& train_t = ctx.input(1);
    const Dims dims{test.shape[0], test.shape[1], train_t.shape[1], ctx.output(0).shape[1], ctx.world_size};
    if (train_t.shape[0] != dims.features || dims.k > dims.train) {
        return ctx.fail("79 reference: train_features_rank_T must be [F, T] with T >= max_k");
    }
    return tk::dispatch_float(ctx, test.dtype, "79 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        return knn<T>(ctx, dims);
    });
}
