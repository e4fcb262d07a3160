// Hand-written sample candidate (not LLM output)
// PKB 70 (TorchRec KJT all-to-all: key_splits[d] = 1 + d % 3 features of B lengths go to rank d with
// their values; rank p returns its features' rows from every rank, feature-major, and their values)
// on the host backend: every rank publishes its lengths and values in a symmetric buffer, barrier, each
// rank walks its features and the sources in TorchRec's order copying rows and value segments, reports
// the values' count as that output's length, barrier.
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int world = ctx.world_size, me = ctx.rank;
    const long long batch = static_cast<long long>(ctx.param("batch_size", 512));
    std::vector<long long> first_feature(world + 1, 0); // key_splits[d] = 1 + d % 3
    for (int d = 0; d < world; ++d) {
        first_feature[d + 1] = first_feature[d] + 1 + d % 3;
    }
    const long long features = first_feature[world], entries = features * batch;
    // Layout: entries lengths, then up to entries * 20 values (the same size on every rank).
    const std::size_t values_at = sizeof(long long) * entries;
    const pkbw::SymmetricMemory sym = ctx.symmetric("kjt70_host", values_at * 21);
    std::memcpy(sym.local, ctx.input(0).data, ctx.input(0).nbytes());
    std::memcpy(static_cast<char*>(sym.local) + values_at, ctx.input(1).data, ctx.input(1).nbytes());
    ctx.barrier();
    auto* out_lengths = ctx.output(0).as<long long>();
    auto* out_values = ctx.output(1).as<long long>();
    long long row_out = 0, written = 0;
    for (long long f = first_feature[me]; f < first_feature[me + 1]; ++f) {
        for (int s = 0; s < world; ++s) {
            const auto* lengths = static_cast<const long long*>(sym.peers[s]);
            const auto* values =
                reinterpret_cast<const long long*>(static_cast<const char*>(sym.peers[s]) + values_at);
            long long start = 0, count = 0;
            for (long long i = 0; i < f * batch; ++i) {
                start += lengths[i];
            }
            for (long long b = 0; b < batch; ++b) {
                count += lengths[f * batch + b];
            }
            std::memcpy(out_lengths + row_out * batch, lengths + f * batch, sizeof(long long) * batch);
            std::memcpy(out_values + written, values + start, sizeof(long long) * count);
            ++row_out;
            written += count;
        }
    }
    ctx.output(2).as<long long>()[0] = world * batch;
    for (int s = 0; s < world; ++s) {
        ctx.output(3).as<long long>()[s] = batch;
    }
    ctx.barrier();
    return ctx.set_output_length(1, written);
}
