// Reference for PKB problem 68: owner = min(id / S, W - 1) per query, the toolkit's stable owner
// partition (tk::partition_by_owner: CUB radix sort and histogram), the ids in send order
// (tk::gather_rows), the counts exchange (tk::exchange_counts), tk::all_to_all_v of the ids, the owner's
// rows fetched (tk::gather_rows at id - rank·S), tk::all_to_all_v of the rows back with the counts
// swapped, the rows put back in query order (gathered at the inverse permutation, PKB's
// argsort(sort_idx)), and tk::matmul with the projection.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/exchange_v.h"
#include "pkbw/toolkit/gather.cuh"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/sort.cuh"

#include <algorithm>
#include <vector>

namespace {

__global__ void owners_of(const long long* ids, long long n, long long shard, int world, long long* owner) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP)
        owner[i] = min(ids[i] / shard, static_cast<long long>(world - 1));
}

__global__ void local_rows(long long* ids, long long n, long long first) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP)
        ids[i] -= first;
}

__global__ void invert(const long long* perm, long long n, long long* inverse) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP)
        inverse[perm[i]] = i;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& table = ctx.input(0);
    const pkbw::TensorView& ids = ctx.input(1);
    const int world = ctx.world_size;
    const long long shard = table.shape[0], embed = table.shape[1], queries = ids.shape[0],
                    slots = std::max(queries, 1LL);
    const std::size_t row_bytes = static_cast<std::size_t>(embed) * pkbw::element_size(table.dtype);
    auto* owner = static_cast<long long*>(ctx.scratch("gnn68_owner", sizeof(long long) * slots));
    auto* perm = static_cast<long long*>(ctx.scratch("gnn68_perm", sizeof(long long) * slots));
    auto* inverse = static_cast<long long*>(ctx.scratch("gnn68_inverse", sizeof(long long) * slots));
    auto* counts = static_cast<long long*>(ctx.scratch("gnn68_counts", sizeof(long long) * world));
    auto* send_ids = static_cast<long long*>(ctx.scratch("gnn68_send_ids", sizeof(long long) * slots));
    void* rows = ctx.scratch("gnn68_rows", row_bytes * slots);
    void* emb = ctx.scratch("gnn68_emb", row_bytes * slots);
    if (!owner || !perm || !inverse || !counts || !send_ids || !rows || !emb || shard < 1) {
        return ctx.fail("68 reference: no scratch memory or an empty shard");
    }
    const unsigned grid = tk::grid_for(slots);
    owners_of<<<grid, 256, 0, ctx.stream()>>>(ids.as<const long long>(), queries, shard, world, owner);
    PKBW_TRY(tk::partition_by_owner(ctx, owner, queries, world, perm, counts));
    PKBW_TRY(tk::gather_rows(ctx, ids.data, sizeof(long long), perm, queries, queries, send_ids));
    std::vector<long long> send_counts(static_cast<std::size_t>(world));
    PKBW_CHECK(ctx, cudaMemcpyAsync(send_counts.data(), counts, sizeof(long long) * world,
                                    cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    const std::vector<long long> recv_counts = tk::exchange_counts(ctx, send_counts);
    const long long arriving = tk::total_of(recv_counts);
    auto* recv_ids = static_cast<long long*>(
        ctx.scratch("gnn68_recv_ids", sizeof(long long) * static_cast<std::size_t>(std::max(arriving, 1LL))));
    void* fetched =
        ctx.scratch("gnn68_fetched", row_bytes * static_cast<std::size_t>(std::max(arriving, 1LL)));
    if (!recv_ids || !fetched) {
        return ctx.fail("68 reference: no scratch memory for the requests");
    }
    PKBW_TRY(tk::all_to_all_v(ctx, ctx.nccl(), send_ids, send_counts.data(), recv_ids, recv_counts.data(),
                              sizeof(long long)));
    local_rows<<<tk::grid_for(std::max(arriving, 1LL)), 256, 0, ctx.stream()>>>(recv_ids, arriving,
                                                                                ctx.rank * shard);
    PKBW_TRY(tk::gather_rows(ctx, table.data, row_bytes, recv_ids, arriving, shard, fetched));
    PKBW_TRY(
        tk::all_to_all_v(ctx, ctx.nccl(), fetched, recv_counts.data(), rows, send_counts.data(), row_bytes));
    invert<<<grid, 256, 0, ctx.stream()>>>(perm, queries, inverse);
    PKBW_TRY(tk::gather_rows(ctx, rows, row_bytes, inverse, queries, queries, emb));
    PKBW_TRY(tk::matmul(ctx, table.dtype, queries, embed, embed, emb, ctx.input(2).data, ctx.output(0).data));
    return tk::finish(ctx);
}
