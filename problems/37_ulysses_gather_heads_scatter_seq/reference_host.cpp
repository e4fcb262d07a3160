// Host oracle for PKB problem 37: all-gather every rank's x [B, T, H, D]; this rank j's output
// [B, Tc, W*H, D] (Tc = ceil(T/W)) at (b, t, r*H + h, d) is rank r's x at (b, j*Tc + t, h, d), or
// zero where j*Tc + t is padding (>= T).
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const int world = ctx.world_size;
    const std::int64_t b_n = x.shape[0], t_n = x.shape[1];
    const std::int64_t chunk = out.shape[1];
    const std::size_t token = static_cast<std::size_t>(x.shape[2] * x.shape[3]) * pkbw::element_size(x.dtype);
    std::vector<char> all(x.nbytes() * static_cast<std::size_t>(world));
    ctx.all_gather_host(x.data, x.nbytes(), all.data());
    char* dst = static_cast<char*>(out.data);
    for (std::int64_t b = 0; b < b_n; ++b) {
        for (std::int64_t t = 0; t < chunk; ++t) {
            const std::int64_t source_t = ctx.rank * chunk + t;
            for (int r = 0; r < world; ++r, dst += token) {
                if (source_t < t_n) {
                    std::memcpy(dst, all.data() + r * x.nbytes() + (b * t_n + source_t) * token, token);
                } else {
                    std::memset(dst, 0, token); // PKB's _pad_tensor fills with 0
                }
            }
        }
    }
    return 0;
}
