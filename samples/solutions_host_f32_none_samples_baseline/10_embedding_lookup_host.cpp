// Hand-written sample candidate (not LLM output)
// PKB 10 (row-sharded embedding lookup) on the host backend: every rank publishes its shard of the
// table in a symmetric buffer; each rank then copies the rows of its indices straight from the
// owners' buffers, grouped by owner rank (owner 0 first, index order kept within an owner), which is
// the order PKB's all-to-all returns them in.
#include "pkbw/solution.h"

#include <cstdint>
#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& indices = ctx.input(0);
    const pkbw::TensorView& shard = ctx.input(1);
    if (indices.dtype != pkbw::DType::I64) {
        return ctx.fail("host embedding sample: indices must be int64");
    }
    const std::int64_t shard_rows = shard.shape[0];
    const std::size_t row_bytes = shard.nbytes() / static_cast<std::size_t>(shard_rows);
    const pkbw::SymmetricMemory sym = ctx.symmetric("embedding_host", shard.nbytes());
    std::memcpy(sym.local, shard.data, shard.nbytes());
    ctx.barrier();
    const std::int64_t* idx = indices.as<const std::int64_t>();
    const std::int64_t count = indices.numel();
    char* out = static_cast<char*>(ctx.output(0).data);
    bool in_range = true;
    for (std::int64_t i = 0; i < count; ++i) {
        in_range = in_range && idx[i] >= 0 && idx[i] < shard_rows * ctx.world_size;
    }
    std::int64_t next = 0;
    for (int owner = 0; owner < ctx.world_size && in_range; ++owner) {
        for (std::int64_t i = 0; i < count; ++i) {
            if (idx[i] / shard_rows != owner) {
                continue;
            }
            const char* src = static_cast<const char*>(sym.peers[owner]) + (idx[i] % shard_rows) * row_bytes;
            std::memcpy(out + next * row_bytes, src, row_bytes);
            ++next;
        }
    }
    ctx.barrier(); // every rank reaches it, even with a bad index, so no peer waits forever
    return in_range ? 0 : ctx.fail("host embedding sample: an index is outside the table");
}
