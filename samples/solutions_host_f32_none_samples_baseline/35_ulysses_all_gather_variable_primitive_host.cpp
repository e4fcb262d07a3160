// Hand-written sample candidate (not LLM output)
// PKB 35 (variable-size all-gather of [M, N] shards, concatenated on dim 0: every shard has the same shape)
// on the host backend: every rank publishes its shard in a symmetric buffer; after a barrier each rank copies
// rank r's buffer to rows r*M.. of its output; a second barrier keeps the next call from overwriting a buffer
// a peer still reads.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    char* out = static_cast<char*>(ctx.output(0).data);
    const std::size_t bytes = x.nbytes();
    const pkbw::SymmetricMemory shards = ctx.symmetric("ulysses_agv_host", bytes);
    std::memcpy(shards.local, x.data, bytes);
    ctx.barrier();
    for (int r = 0; r < ctx.world_size; ++r) {
        std::memcpy(out + static_cast<std::size_t>(r) * bytes, shards.peers[r], bytes);
    }
    ctx.barrier();
    return 0;
}
