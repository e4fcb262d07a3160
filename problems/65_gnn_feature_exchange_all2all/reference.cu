// Reference for PKB problem 65: the toolkit's row gather (local_features[seed_inverse_ids]), then one
// toolkit all_to_all_v whose per-peer offsets express PKB's rotated lists directly: to peer p this
// rank j sends its gathered chunk (p - j) mod W (split by counts_received) and receives peer p's rows
// into its output chunk (p - j) mod W (split by counts_sent), so nothing is packed.
#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gather.cuh"

#include <string>
#include <vector>

namespace {

// A list param (one entry per rank) through ctx.param_list, or empty when the problem has none.
std::vector<long long> list_param(const pkbw::Context& ctx, const char* name) {
    double values[pkbw::kMaxRanks];
    const int length = ctx.param_list(name, values, pkbw::kMaxRanks);
    if (length < 0 || length > pkbw::kMaxRanks) {
        return {};
    }
    return std::vector<long long>(values, values + length);
}

// Offsets of the chunks of a split, in rows.
std::vector<long long> offsets_of(const std::vector<long long>& counts) {
    std::vector<long long> offsets(counts.size(), 0);
    for (std::size_t k = 1; k < counts.size(); ++k) {
        offsets[k] = offsets[k - 1] + counts[k - 1];
    }
    return offsets;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& features = ctx.input(0);
    const pkbw::TensorView& ids = ctx.input(1);
    const int world = ctx.world_size, me = ctx.rank;
    const std::vector<long long> sent = list_param(ctx, "counts_sent");
    const std::vector<long long> received = list_param(ctx, "counts_received");
    if (static_cast<int>(sent.size()) != world || static_cast<int>(received.size()) != world) {
        return ctx.fail("65 reference: counts_sent and counts_received need one entry per rank");
    }
    const std::size_t row_bytes =
        static_cast<std::size_t>(features.shape[1]) * pkbw::element_size(features.dtype);
    void* gathered = ctx.scratch("gnn65_gathered", static_cast<std::size_t>(ids.numel()) * row_bytes);
    PKBW_TRY(pkbw::tk::gather_rows(ctx, features.data, row_bytes, ids.as<const long long>(), ids.numel(),
                                   features.shape[0], gathered));
    const std::vector<long long> in_offsets = offsets_of(received), out_offsets = offsets_of(sent);
    std::vector<long long> send_counts(world), send_offsets(world), recv_counts(world), recv_offsets(world);
    for (int p = 0; p < world; ++p) {
        const int chunk = ((p - me) % world + world) % world; // PKB's _shift by this rank
        send_counts[p] = received[chunk];
        send_offsets[p] = in_offsets[chunk];
        recv_counts[p] = sent[chunk];
        recv_offsets[p] = out_offsets[chunk];
    }
    return pkbw::tk::all_to_all_v(ctx, ctx.nccl(), gathered, send_counts.data(), ctx.output(0).data,
                                  recv_counts.data(), row_bytes, send_offsets.data(), recv_offsets.data());
}
