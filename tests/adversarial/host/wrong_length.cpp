// Adversarial candidate: problem 67 (a variable-length output) computed right, but the length it
// reports is one row short: only the valid prefixes are compared, so the lengths must be. Expected:
// mismatch, "output_0: length K-1, the reference's K".
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
    const std::size_t ids_at = sizeof(long long) * world, rows_at = ids_at + sizeof(long long) * n;
    const pkbw::SymmetricMemory sym = ctx.symmetric("wrong_length", rows_at + row_bytes * n);
    auto* counts = static_cast<long long*>(sym.local);
    std::vector<long long> offset(world + 1, 0);
    std::memset(counts, 0, ids_at);
    for (long long i = 0; i < n; ++i) {
        ++counts[ids[i] % world];
    }
    for (int p = 0; p < world; ++p) {
        offset[p + 1] = offset[p] + counts[p];
    }
    char* base = static_cast<char*>(sym.local);
    for (long long i = 0; i < n; ++i) {
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
        std::memcpy(ctx.output(0).as<char>() + k * sizeof(long long),
                    peer + ids_at + start * sizeof(long long), rows * sizeof(long long));
        std::memcpy(ctx.output(1).as<char>() + k * row_bytes, peer + rows_at + start * row_bytes,
                    rows * row_bytes);
        k += rows;
    }
    ctx.barrier();
    k -= 1; // the lie
    ctx.set_output_length(0, k);
    return ctx.set_output_length(1, k);
}
