// Hand-written sample candidate (not LLM output)
// PKB 67 (pair i of (idx, value) goes to rank idx[i] % W, stable; rank p returns the ids and rows it
// receives, in source-rank order: K of them, K data-dependent) on the host backend: each rank packs its
// pairs by owner into a symmetric buffer with its per-owner counts, barrier, reads its chunk from every
// peer, reports K as both outputs' length, barrier.
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& idx = ctx.input(0);
    const pkbw::TensorView& value = ctx.input(1);
    const int world = ctx.world_size, me = ctx.rank;
    const long long n = idx.shape[0];
    const std::size_t row_bytes = value.nbytes() / static_cast<std::size_t>(n);
    const long long* ids = idx.as<const long long>();
    // Layout of the symmetric buffer: W counts, then n ids, then n rows, all in owner order.
    const std::size_t ids_at = sizeof(long long) * world, rows_at = ids_at + sizeof(long long) * n;
    const pkbw::SymmetricMemory sym = ctx.symmetric("gnn67_host", rows_at + row_bytes * n);
    auto* counts = static_cast<long long*>(sym.local);
    std::vector<long long> offset(world + 1, 0);
    for (int p = 0; p < world; ++p) {
        counts[p] = 0;
    }
    for (long long i = 0; i < n; ++i) {
        ++counts[ids[i] % world];
    }
    for (int p = 0; p < world; ++p) {
        offset[p + 1] = offset[p] + counts[p];
    }
    char* base = static_cast<char*>(sym.local);
    for (long long i = 0; i < n; ++i) { // a stable counting sort by owner
        const long long at = offset[ids[i] % world]++;
        std::memcpy(base + ids_at + at * sizeof(long long), &ids[i], sizeof(long long));
        std::memcpy(base + rows_at + at * row_bytes, static_cast<const char*>(value.data) + i * row_bytes,
                    row_bytes);
    }
    ctx.barrier();
    long long k = 0;
    for (int p = 0; p < world; ++p) {
        const char* peer = static_cast<const char*>(sym.peers[p]);
        const auto* peer_counts = reinterpret_cast<const long long*>(peer);
        long long start = 0;
        for (int q = 0; q < me; ++q) {
            start += peer_counts[q];
        }
        const long long rows = peer_counts[me];
        if (k + rows > ctx.output(0).shape[0]) {
            return ctx.fail("more rows than the outputs hold");
        }
        std::memcpy(ctx.output(0).as<char>() + k * sizeof(long long),
                    peer + ids_at + start * sizeof(long long), rows * sizeof(long long));
        std::memcpy(ctx.output(1).as<char>() + k * row_bytes, peer + rows_at + start * row_bytes,
                    rows * row_bytes);
        k += rows;
    }
    ctx.barrier();
    if (ctx.set_output_length(0, k) != 0) {
        return 1;
    }
    return ctx.set_output_length(1, k);
}
