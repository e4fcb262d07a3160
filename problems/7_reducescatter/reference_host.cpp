// Host oracle for PKB problem 7: one all-gather per row block (round k gathers every rank's block
// k), and rank k sums its round in double.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    const std::size_t block = out.nbytes();
    const std::size_t size = pkbw::element_size(in.dtype);
    std::vector<std::byte> all(block * static_cast<std::size_t>(ctx.world_size));
    for (int k = 0; k < ctx.world_size; ++k) {
        ctx.all_gather_host(static_cast<const char*>(in.data) + k * block, block, all.data());
        if (k != ctx.rank) {
            continue;
        }
        auto* o = static_cast<std::byte*>(out.data);
        for (std::int64_t i = 0; i < out.numel(); ++i) {
            double sum = 0;
            for (int r = 0; r < ctx.world_size; ++r) {
                sum += pkbw::element_to_f64(in.dtype, all.data() + r * block + i * size);
            }
            pkbw::f64_to_element(out.dtype, sum, o + i * size);
        }
    }
    return 0;
}
