// Host oracle for PKB problem 65: gather the rows, then the toolkit's host all_to_all_v with the send
// chunks in PKB's rotated order (to peer p, gathered chunk (p - j) mod W); what arrives from peer p goes
// to output chunk (p - j) mod W.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <cstring>
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

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& features = ctx.input(0);
    const pkbw::TensorView& ids = ctx.input(1);
    const int world = ctx.world_size, me = ctx.rank;
    const std::vector<long long> sent = list_param(ctx, "counts_sent");
    const std::vector<long long> received = list_param(ctx, "counts_received");
    if (static_cast<int>(sent.size()) != world || static_cast<int>(received.size()) != world) {
        return ctx.fail("65 oracle: counts_sent and counts_received need one entry per rank");
    }
    const std::size_t row_bytes =
        static_cast<std::size_t>(features.shape[1]) * pkbw::element_size(features.dtype);
    const auto* table = static_cast<const char*>(features.data);
    const auto* id = ids.as<const long long>();
    std::vector<long long> in_offsets(world, 0), out_offsets(world, 0);
    for (int k = 1; k < world; ++k) {
        in_offsets[k] = in_offsets[k - 1] + received[k - 1];
        out_offsets[k] = out_offsets[k - 1] + sent[k - 1];
    }
    // The send buffer in peer order: peer p gets gathered chunk (p - me) mod W.
    std::vector<char> send;
    std::vector<long long> send_counts(world);
    for (int p = 0; p < world; ++p) {
        const int chunk = ((p - me) % world + world) % world;
        send_counts[p] = received[chunk];
        for (long long t = in_offsets[chunk]; t < in_offsets[chunk] + received[chunk]; ++t) {
            if (id[t] < 0 || id[t] >= features.shape[0]) {
                return ctx.fail("65 oracle: a seed id is outside local_features");
            }
            send.insert(send.end(), table + id[t] * row_bytes, table + (id[t] + 1) * row_bytes);
        }
    }
    const std::vector<std::byte> recv = pkbw::tk::all_to_all_v_host(ctx, send.data(), send_counts, row_bytes);
    // What arrives is packed in source-rank order; from p it belongs to output chunk (p - me) mod W.
    char* out = static_cast<char*>(ctx.output(0).data);
    std::size_t at = 0;
    for (int p = 0; p < world; ++p) {
        const int chunk = ((p - me) % world + world) % world;
        const std::size_t bytes = static_cast<std::size_t>(sent[chunk]) * row_bytes;
        std::memcpy(out + out_offsets[chunk] * row_bytes, recv.data() + at, bytes);
        at += bytes;
    }
    return at == recv.size() ? 0 : ctx.fail("65 oracle: the peers' counts do not match counts_sent");
}
