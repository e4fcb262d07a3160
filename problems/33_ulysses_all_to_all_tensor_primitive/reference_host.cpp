// Host oracle for PKB problem 33: all-gather every rank's x, then build this rank's [M/W, W*N]:
// row i, column block r is row j*M/W + i of rank r (j = this rank).
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    char* out = static_cast<char*>(ctx.output(0).data);
    const int world = ctx.world_size;
    const std::int64_t rows = x.shape[0] / world;
    const std::size_t row_bytes = static_cast<std::size_t>(x.shape[1]) * pkbw::element_size(x.dtype);
    std::vector<char> all(x.nbytes() * static_cast<std::size_t>(world));
    ctx.all_gather_host(x.data, x.nbytes(), all.data());
    for (std::int64_t i = 0; i < rows; ++i) {
        for (int r = 0; r < world; ++r) {
            const char* src = all.data() + r * x.nbytes() + (ctx.rank * rows + i) * row_bytes;
            std::memcpy(out + (i * world + r) * row_bytes, src, row_bytes);
        }
    }
    return 0;
}
