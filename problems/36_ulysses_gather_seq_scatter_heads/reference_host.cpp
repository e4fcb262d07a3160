// Host oracle for PKB problem 36: all-gather every rank's x [B, T, H, D]; this rank j's output
// [B, W*T, H/W, D] at (b, r*T + t, h, d) is rank r's x at (b, t, j*H/W + h, d).
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    char* out = static_cast<char*>(ctx.output(0).data);
    const int world = ctx.world_size;
    const std::int64_t b_n = x.shape[0], t_n = x.shape[1], heads = x.shape[2];
    const std::int64_t local_heads = heads / world;
    // One (h, d) run of the local heads is contiguous in both tensors.
    const std::size_t run = static_cast<std::size_t>(local_heads * x.shape[3]) * pkbw::element_size(x.dtype);
    const std::size_t token = static_cast<std::size_t>(heads * x.shape[3]) * pkbw::element_size(x.dtype);
    std::vector<char> all(x.nbytes() * static_cast<std::size_t>(world));
    ctx.all_gather_host(x.data, x.nbytes(), all.data());
    for (std::int64_t b = 0; b < b_n; ++b) {
        for (int r = 0; r < world; ++r) {
            for (std::int64_t t = 0; t < t_n; ++t) {
                const char* src = all.data() + r * x.nbytes() + (b * t_n + t) * token + ctx.rank * run;
                std::memcpy(out + ((b * world + r) * t_n + t) * run, src, run);
            }
        }
    }
    return 0;
}
