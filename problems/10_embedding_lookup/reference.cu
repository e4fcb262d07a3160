// Reference for PKB problem 10. PKB exchanges counts, then indices, then rows with three variable
// all-to-alls and host syncs. Here: ncclAllGather of every rank's indices (the same information as
// its count and index exchanges), the send and receive lists built on the host, a gather kernel
// for the requested rows, and one grouped ncclSend/ncclRecv exchange of the rows.
#include "pkbw/solution.h"

#include <cstdint>
#include <vector>

namespace {

__global__ void gather_rows(const char* shard, const long long* rows, char* send, long long count,
                            long long row_bytes) {
    const long long words = row_bytes / 2; // every dtype pkbw uses here has an even row size
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count * words;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
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
    ncclResult_t rc =
        ncclAllGather(indices.data, all_dev, indices.nbytes(), ncclUint8, ctx.nccl(), ctx.stream());
    if (rc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc));
    }
    std::vector<long long> all(static_cast<std::size_t>(n_idx * world));
    cudaMemcpyAsync(all.data(), all_dev, indices.nbytes() * world, cudaMemcpyDeviceToHost, ctx.stream());
    cudaStreamSynchronize(ctx.stream());
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
        cudaMemcpyAsync(rows_dev, send_rows.data(), sizeof(long long) * total_send, cudaMemcpyHostToDevice,
                        ctx.stream());
        const long long work = total_send * row_bytes / 2;
        const int grid = static_cast<int>(work / 256 + 1 < 8192 ? work / 256 + 1 : 8192);
        gather_rows<<<grid, 256, 0, ctx.stream()>>>(static_cast<const char*>(shard.data), rows_dev, send,
                                                    total_send, row_bytes);
    }
    rc = ncclGroupStart();
    long long send_off = 0, recv_off = 0;
    for (int q = 0; q < world && rc == ncclSuccess; ++q) {
        if (send_count[q] > 0) {
            rc = ncclSend(send + send_off * row_bytes, send_count[q] * row_bytes, ncclUint8, q, ctx.nccl(),
                          ctx.stream());
        }
        if (rc == ncclSuccess && recv_count[q] > 0) {
            rc = ncclRecv(static_cast<char*>(out.data) + recv_off * row_bytes, recv_count[q] * row_bytes,
                          ncclUint8, q, ctx.nccl(), ctx.stream());
        }
        send_off += send_count[q];
        recv_off += recv_count[q];
    }
    const ncclResult_t end = ncclGroupEnd();
    if (rc == ncclSuccess) {
        rc = end;
    }
    if (rc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc));
    }
    // The host lists must outlive the asynchronous upload.
    cudaStreamSynchronize(ctx.stream());
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
