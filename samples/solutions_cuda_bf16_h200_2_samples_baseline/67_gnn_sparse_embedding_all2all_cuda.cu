// Hand-written sample candidate (not LLM output)
// PKB 67 (pair i of (idx, value) goes to rank idx[i] % W, stable; rank p returns the ids and rows it
// receives, in source-rank order: K of them, K data-dependent), baseline: the ids come to the host for a
// stable counting sort by owner, a kernel packs ids and rows in that order into a symmetric buffer whose
// head holds the per-owner counts, a host barrier, one device-to-device copy per peer of its chunk for
// this rank, K reported as both outputs' length, a last host barrier.
#include "pkbw/solution.h"

#include <vector>

namespace {

__global__ void pack(const long long* ids, const char* rows, const long long* order, long long n,
                     long long row_bytes, long long* out_ids, char* out_rows) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n * row_bytes;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long t = i / row_bytes, b = i % row_bytes;
        out_rows[i] = rows[order[t] * row_bytes + b];
        if (b == 0) {
            out_ids[t] = ids[order[t]];
        }
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& idx = ctx.input(0);
    const pkbw::TensorView& value = ctx.input(1);
    const int world = ctx.world_size, me = ctx.rank;
    const long long n = idx.shape[0];
    const long long row_bytes = static_cast<long long>(value.nbytes()) / n;
    std::vector<long long> ids(n), counts(world, 0), offset(world + 1, 0), order(n);
    cudaMemcpyAsync(ids.data(), idx.data, n * sizeof(long long), cudaMemcpyDeviceToHost, ctx.stream());
    cudaStreamSynchronize(ctx.stream());
    for (long long i = 0; i < n; ++i) {
        ++counts[ids[i] % world];
    }
    for (int p = 0; p < world; ++p) {
        offset[p + 1] = offset[p] + counts[p];
    }
    for (long long i = 0; i < n; ++i) {
        order[offset[ids[i] % world]++] = i;
    }
    const std::size_t ids_at = sizeof(long long) * world, rows_at = ids_at + sizeof(long long) * n;
    const pkbw::SymmetricMemory sym = ctx.symmetric("gnn67_baseline", rows_at + row_bytes * n);
    auto* order_dev = static_cast<long long*>(ctx.scratch("gnn67_order", sizeof(long long) * n));
    char* base = static_cast<char*>(sym.local);
    cudaMemcpyAsync(order_dev, order.data(), sizeof(long long) * n, cudaMemcpyHostToDevice, ctx.stream());
    cudaMemcpyAsync(base, counts.data(), ids_at, cudaMemcpyHostToDevice, ctx.stream());
    const long long total = n * row_bytes;
    const unsigned blocks = static_cast<unsigned>(total / 256 + 1 > 4096 ? 4096 : total / 256 + 1);
    pack<<<blocks, 256, 0, ctx.stream()>>>(idx.as<const long long>(), static_cast<const char*>(value.data),
                                           order_dev, n, row_bytes,
                                           reinterpret_cast<long long*>(base + ids_at), base + rows_at);
    ctx.barrier(); // waits for this rank's stream first
    long long k = 0;
    std::vector<long long> peer_counts(world);
    for (int p = 0; p < world; ++p) {
        const char* peer = static_cast<const char*>(sym.peers[p]);
        cudaMemcpy(peer_counts.data(), peer, ids_at, cudaMemcpyDeviceToHost);
        long long start = 0;
        for (int q = 0; q < me; ++q) {
            start += peer_counts[q];
        }
        const long long rows = peer_counts[me];
        if (k + rows > ctx.output(0).shape[0]) {
            return ctx.fail("more rows than the outputs hold");
        }
        cudaMemcpyAsync(ctx.output(0).as<char>() + k * sizeof(long long),
                        peer + ids_at + start * sizeof(long long), rows * sizeof(long long),
                        cudaMemcpyDeviceToDevice, ctx.stream());
        cudaMemcpyAsync(ctx.output(1).as<char>() + k * row_bytes, peer + rows_at + start * row_bytes,
                        rows * row_bytes, cudaMemcpyDeviceToDevice, ctx.stream());
        k += rows;
    }
    ctx.barrier();
    if (ctx.set_output_length(0, k) != 0) {
        return 1;
    }
    return ctx.set_output_length(1, k);
}
