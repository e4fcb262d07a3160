// Host oracle for PKB problem 3: gather every input, keep the source rank's.
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const int src = static_cast<int>(ctx.param("src", 0));
    const std::size_t bytes = in.nbytes();
    std::vector<std::byte> all(bytes * static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(in.data, bytes, all.data());
    std::memcpy(ctx.output(0).data, all.data() + static_cast<std::size_t>(src) * bytes, bytes);
    return 0;
}
