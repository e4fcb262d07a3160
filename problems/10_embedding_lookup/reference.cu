// Reference for PKB problem 10. PKB exchanges counts, then indices, then rows with three variable
// all-to-alls and host syncs. Here: ncclAllGather of every rank's indices (the same information as
// its count and index exchanges), the send and receive lists built on the host, a gather kernel
// for the requested rows, and one grouped ncclSend/ncclRecv exchange of the rows.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cstdint>
#include <vector>

namespace {

__global__ void gather_rows(const char* shard, const long long* rows, char* send, long long count,
                            long long row_bytes) {
    const long long words = row_bytes / 2; // every dtype pkbw uses here has an even row size
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count * words; i += PKBW_GRID_STRIDE_STEP) {
        const long long t = i / words, w = i % words;
        reinterpret_cast<unsigned short*>(send)[i] =
            reinterpret_cast<const unsigned short*>(shard + rows[t] * row_bytes)[w];
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& indices = ctx.input(0);
    const pkbw::TensorView& shard = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const int world = ctx.world_size;
    const long long n_idx = indices.numel();
    const long long shard_rows = shard.shape[0];
    const long long row_bytes = static_cast<long long>(shard.nbytes() / static_cast<std::size_t>(shard_rows));
    if (row_bytes % 2 != 0) {
        return ctx.fail("10_embedding_lookup reference: rows must have an even byte size");
    }
    auto* all_dev = static_cast<long long*>(ctx.scratch("emb_all_idx", indices.nbytes() * world));
    PKBW_CHECK(ctx,
               ncclAllGather(indices.data, all_dev, indices.nbytes(), ncclUint8, ctx.nccl(), ctx.stream()));
    std::vector<long long> all(static_cast<std::size_t>(n_idx * world));
    PKBW_CHECK(ctx, cudaMemcpyAsync(all.data(), all_dev, indices.nbytes() * world, cudaMemcpyDeviceToHost,
                                    ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    // Rows this rank sends to q: q's indices owned here, in q's order. Rows it receives from p: its
    // own indices owned by p, which land in owner order (PKB's split order).
    std::vector<long long> send_rows;
    std::vector<long long> send_count(world, 0), recv_count(world, 0);
    for (int q = 0; q < world; ++q) {
        for (long long i = 0; i < n_idx; ++i) {
            const long long g = all[q * n_idx + i];
            if (g / shard_rows == ctx.rank) {
                long long local = g - ctx.rank * shard_rows;
                local = local < 0 ? 0 : (local >= shard_rows ? shard_rows - 1 : local); // PKB clamps
                send_rows.push_back(local);
                ++send_count[q];
            }
        }
    }
    for (long long i = 0; i < n_idx; ++i) {
        const long long owner = all[ctx.rank * n_idx + i] / shard_rows;
        if (owner >= 0 && owner < world) {
            ++recv_count[owner];
        }
    }
    const long long total_send = static_cast<long long>(send_rows.size());
    auto* rows_dev =
        static_cast<long long*>(ctx.scratch("emb_rows", sizeof(long long) * (n_idx * world + 1)));
    char* send = static_cast<char*>(
        ctx.scratch("emb_send", static_cast<std::size_t>(row_bytes) * (n_idx * world + 1)));
    if (total_send > 0) {
        PKBW_CHECK(ctx, cudaMemcpyAsync(rows_dev, send_rows.data(), sizeof(long long) * total_send,
                                        cudaMemcpyHostToDevice, ctx.stream()));
        gather_rows<<<pkbw::tk::grid_for(total_send * row_bytes / 2), 256, 0, ctx.stream()>>>(
            static_cast<const char*>(shard.data), rows_dev, send, total_send, row_bytes);
    }
    PKBW_TRY(pkbw::tk::all_to_all_v(ctx, ctx.nccl(), send, send_count.data(), out.data, recv_count.data(),
                                    static_cast<std::size_t>(row_bytes)));
    // The host lists must outlive the asynchronous upload.
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    return pkbw::tk::finish(ctx);
}
