// Host oracle for PKB problem 27: the toolkit's host all_to_all_v of the token rows with the
// problem's split lists; what arrives is packed in source-rank order. Bytes move unchanged.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/split_lists.h"

#include <cstring>
#include <string>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    if (ctx.world_size == 1) {
        std::memcpy(out.data, in.data, in.nbytes());
        return 0;
    }
    const std::vector<long long> send = pkbw::tk::rank_list(ctx, "input_split_sizes");
    const std::vector<long long> recv = pkbw::tk::rank_list(ctx, "output_split_sizes");
    if (send.empty() || recv.empty()) {
        return ctx.fail("27 oracle: input_split_sizes and output_split_sizes need one entry per rank");
    }
    long long sent = 0;
    for (long long s : send) {
        sent += s;
    }
    if (sent != in.shape[0]) {
        return ctx.fail("27 oracle: input_split_sizes do not sum to local_tensor's rows");
    }
    const std::size_t row_bytes = static_cast<std::size_t>(in.shape[1]) * pkbw::element_size(in.dtype);
    const std::vector<std::byte> got = pkbw::tk::all_to_all_v_host(ctx, in.data, send, row_bytes);
    // What each peer sent this rank must be what output_split_sizes expects from it; the host
    // exchange packs by the senders' counts, so compare the total and each peer's share.
    std::vector<long long> counts(static_cast<std::size_t>(ctx.world_size) * ctx.world_size);
    ctx.all_gather_host(send.data(), sizeof(long long) * ctx.world_size, counts.data());
    for (int p = 0; p < ctx.world_size; ++p) {
        if (counts[static_cast<std::size_t>(p) * ctx.world_size + ctx.rank] != recv[p]) {
            return ctx.fail("27 oracle: a peer sends a different row count than output_split_sizes expects");
        }
    }
    if (got.size() != out.nbytes()) {
        return ctx.fail("27 oracle: the received rows do not fill the output");
    }
    std::memcpy(out.data, got.data(), got.size());
    return 0;
}
