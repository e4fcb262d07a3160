// Hand-written sample candidate (not LLM output)
// PKB 85 (rank r returns elements [start_r, start_r + len_r) of the ascending global sort of every
// rank's shard, start_r = r * (T / W) + min(r, T % W), len_r = T / W + (r < T % W)) on the host backend:
// the shard sizes by all_gather_host, each rank's shard as doubles in a symmetric buffer, barrier,
// every rank copies all shards, sorts them and keeps its slice, barrier.
#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

#include <algorithm>
#include <string>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& shard = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const int world = ctx.world_size;
    const long long mine = shard.numel();
    std::vector<long long> sizes(world);
    ctx.all_gather_host(&mine, sizeof mine, sizes.data());
    long long most = 1, total = 0;
    for (long long s : sizes) {
        most = std::max(most, s);
        total += s;
    }
    // One buffer per size: the shard sizes change with the trial, and a buffer cannot grow.
    const pkbw::SymmetricMemory sym =
        ctx.symmetric(("sort85_host_" + std::to_string(most)).c_str(), sizeof(double) * most);
    double* local = static_cast<double*>(sym.local);
    const std::size_t size = pkbw::element_size(shard.dtype);
    for (long long i = 0; i < mine; ++i) {
        local[i] = pkbw::element_to_f64(shard.dtype, static_cast<const std::byte*>(shard.data) + i * size);
    }
    ctx.barrier();
    std::vector<double> all;
    all.reserve(total);
    for (int r = 0; r < world; ++r) {
        const double* peer = static_cast<const double*>(sym.peers[r]);
        all.insert(all.end(), peer, peer + sizes[r]);
    }
    ctx.barrier(); // nobody overwrites the buffer while a peer still reads it
    std::sort(all.begin(), all.end());
    const long long base = total / world, extra = total % world;
    const long long start = ctx.rank * base + std::min<long long>(ctx.rank, extra);
    const long long length = base + (ctx.rank < extra ? 1 : 0);
    if (length != out.numel()) {
        return ctx.fail("the output does not hold this rank's slice");
    }
    const std::size_t out_size = pkbw::element_size(out.dtype);
    for (long long i = 0; i < length; ++i) {
        pkbw::f64_to_element(out.dtype, all[start + i], static_cast<std::byte*>(out.data) + i * out_size);
    }
    return 0;
}
