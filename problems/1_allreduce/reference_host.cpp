// Host oracle for PKB problem 1: gather every rank's input, sum in double, round once.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const std::size_t bytes = in.nbytes();
    const std::size_t size = pkbw::element_size(in.dtype);
    std::vector<std::byte> all(bytes * static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(in.data, bytes, all.data());
    auto* dst = static_cast<std::byte*>(out.data);
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        double sum = 0;
        for (int r = 0; r < ctx.world_size; ++r) {
            sum += pkbw::element_to_f64(in.dtype, all.data() + r * bytes + i * size);
        }
        pkbw::f64_to_element(out.dtype, sum, dst + i * size);
    }
    return 0;
}
