// Host oracle for PKB problem 30: per tensor, a host all-gather, the sum in double in rank order,
// one rounding to D.
#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    for (int k = 0; k < 3; ++k) {
        const pkbw::TensorView& in = ctx.input(k);
        const pkbw::TensorView& out = ctx.output(k);
        const std::size_t size = pkbw::element_size(in.dtype);
        std::vector<std::byte> all(in.nbytes() * static_cast<std::size_t>(ctx.world_size));
        ctx.all_gather_host(in.data, in.nbytes(), all.data());
        for (std::int64_t i = 0; i < in.numel(); ++i) {
            double sum = 0;
            for (int r = 0; r < ctx.world_size; ++r) {
                sum += pkbw::element_to_f64(in.dtype, all.data() + r * in.nbytes() + i * size);
            }
            pkbw::f64_to_element(out.dtype, sum, static_cast<std::byte*>(out.data) + i * size);
        }
    }
    return 0;
}
