// Hand-written sample candidate (not LLM output)
// PKB 70 (TorchRec KJT all-to-all: key_splits[d] = 1 + d % 3 features of B lengths go to rank d with
// their values; rank p returns its features' rows from every rank, feature-major, and their values),
// baseline: every rank copies its lengths and values into a symmetric buffer, a host barrier, each rank
// reads every source's lengths to the host for the offsets and copies rows and value segments from the
// peers device to device in TorchRec's order, reports the values' count as that output's length, a last
// host barrier.
#include "pkbw/solution.h"

#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const int world = ctx.world_size, me = ctx.rank;
    const long long batch = static_cast<long long>(ctx.param("batch_size", 512));
    std::vector<long long> first_feature(world + 1, 0); // key_splits[d] = 1 + d % 3
    for (int d = 0; d < world; ++d) {
        first_feature[d + 1] = first_feature[d] + 1 + d % 3;
    }
    const long long features = first_feature[world], entries = features * batch;
    const std::size_t values_at = sizeof(long long) * entries;
    const pkbw::SymmetricMemory sym = ctx.symmetric("kjt70_baseline", values_at * 21);
    char* local = static_cast<char*>(sym.local);
    cudaMemcpyAsync(local, ctx.input(0).data, ctx.input(0).nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    cudaMemcpyAsync(local + values_at, ctx.input(1).data, ctx.input(1).nbytes(), cudaMemcpyDeviceToDevice,
                    ctx.stream());
    ctx.barrier(); // waits for this rank's stream first
    std::vector<std::vector<long long>> offsets(world, std::vector<long long>(features + 1, 0));
    std::vector<long long> lengths(entries);
    for (int s = 0; s < world; ++s) {
        cudaMemcpy(lengths.data(), sym.peers[s], values_at, cudaMemcpyDeviceToHost);
        for (long long f = 0; f < features; ++f) {
            long long sum = 0;
            for (long long b = 0; b < batch; ++b) {
                sum += lengths[f * batch + b];
            }
            offsets[s][f + 1] = offsets[s][f] + sum;
        }
    }
    char* out_lengths = ctx.output(0).as<char>();
    char* out_values = ctx.output(1).as<char>();
    long long row_out = 0, written = 0;
    for (long long f = first_feature[me]; f < first_feature[me + 1]; ++f) {
        for (int s = 0; s < world; ++s, ++row_out) {
            const char* peer = static_cast<const char*>(sym.peers[s]);
            const long long count = offsets[s][f + 1] - offsets[s][f];
            cudaMemcpyAsync(out_lengths + row_out * batch * 8, peer + f * batch * 8, batch * 8,
                            cudaMemcpyDeviceToDevice, ctx.stream());
            cudaMemcpyAsync(out_values + written * 8, peer + values_at + offsets[s][f] * 8, count * 8,
                            cudaMemcpyDeviceToDevice, ctx.stream());
            written += count;
        }
    }
    std::vector<long long> strides(world + 1, batch);
    strides[0] = world * batch;
    cudaMemcpyAsync(ctx.output(2).data, strides.data(), 8, cudaMemcpyHostToDevice, ctx.stream());
    cudaMemcpyAsync(ctx.output(3).data, strides.data() + 1, 8 * world, cudaMemcpyHostToDevice, ctx.stream());
    ctx.barrier(); // every peer has read this rank's buffer (and this stack's strides are copied)
    return ctx.set_output_length(1, written);
}
