// Host oracle for PKB problem 10: gather every shard, then emit this rank's rows grouped by owner
// rank, the order of the indices kept within an owner (PKB's all-to-all split order).
#include "pkbw/solution.h"

#include <cstdint>
#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& indices = ctx.input(0);
    const pkbw::TensorView& shard = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const std::int64_t n_idx = indices.numel();
    const std::int64_t shard_rows = shard.shape[0];
    const std::size_t row_bytes = shard.nbytes() / static_cast<std::size_t>(shard_rows);
    std::vector<std::byte> table(shard.nbytes() * static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(shard.data, shard.nbytes(), table.data());
    const auto* idx = indices.as<const std::int64_t>();
    auto* dst = static_cast<std::byte*>(out.data);
    std::int64_t written = 0;
    for (int owner = 0; owner < ctx.world_size; ++owner) {
        for (std::int64_t i = 0; i < n_idx; ++i) {
            if (idx[i] / shard_rows != owner) {
                continue;
            }
            std::memcpy(dst + written * row_bytes,
                        table.data() + static_cast<std::size_t>(idx[i]) * row_bytes, row_bytes);
            ++written;
        }
    }
    return written == n_idx ? 0 : ctx.fail("10_embedding_lookup host reference: an index is out of range");
}
