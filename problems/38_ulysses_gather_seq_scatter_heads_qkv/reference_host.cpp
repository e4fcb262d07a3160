// Host oracle for PKB problem 38: all-gather every rank's qkv [B, T, 3*C] (C = 512); this rank j's
// output [B, W*T, 3*C/W] at (b, r*T + t, q*C/W + c) is rank r's qkv at (b, t, q*C + j*C/W + c).
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    char* out = static_cast<char*>(ctx.output(0).data);
    const int world = ctx.world_size;
    const std::int64_t b_n = x.shape[0], t_n = x.shape[1], third = x.shape[2] / 3;
    const std::size_t size = pkbw::element_size(x.dtype);
    const std::size_t run = static_cast<std::size_t>(third / world) * size; // one third's chunk
    const std::size_t token = static_cast<std::size_t>(x.shape[2]) * size;
    std::vector<char> all(x.nbytes() * static_cast<std::size_t>(world));
    ctx.all_gather_host(x.data, x.nbytes(), all.data());
    for (std::int64_t b = 0; b < b_n; ++b) {
        for (int r = 0; r < world; ++r) {
            for (std::int64_t t = 0; t < t_n; ++t) {
                const char* src = all.data() + r * x.nbytes() + (b * t_n + t) * token + ctx.rank * run;
                for (int q = 0; q < 3; ++q, out += run) {
                    std::memcpy(out, src + q * third * size, run);
                }
            }
        }
    }
    return 0;
}
