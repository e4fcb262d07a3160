// Host oracle for PKB problem 6: the root keeps the all-gathered stack; others copy their input.
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const int dst = static_cast<int>(ctx.param("dst", 0));
    const std::size_t bytes = in.nbytes();
    std::vector<std::byte> all(bytes * static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(in.data, bytes, all.data());
    if (ctx.rank == dst) {
        std::memcpy(out.data, all.data(), all.size());
    } else {
        std::memcpy(out.data, in.data, bytes);
    }
    return 0;
}
