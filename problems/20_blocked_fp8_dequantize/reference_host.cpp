// Host oracle for PKB problem 20: y * s in fp32 (the product of two narrow values is the same in
// fp32 on every machine), then one host all-gather per chunk for the all-to-all.
#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& y = ctx.input(0);
    const pkbw::TensorView& s = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const std::int64_t block = static_cast<std::int64_t>(ctx.param("block_size", 128));
    const std::int64_t count = y.numel();
    const std::size_t ys = pkbw::element_size(y.dtype), ss = pkbw::element_size(s.dtype);
    std::vector<float> x(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
        x[i] = pkbw::element_to_f32(y.dtype, static_cast<const std::byte*>(y.data) + i * ys) *
               pkbw::element_to_f32(s.dtype, static_cast<const std::byte*>(s.data) + (i / block) * ss);
    }
    const int world = ctx.world_size;
    const std::size_t chunk = x.size() / world;
    std::vector<float> all(x.size());
    for (int k = 0; k < world; ++k) {
        ctx.all_gather_host(x.data() + k * chunk, chunk * sizeof(float), all.data());
        if (k == ctx.rank) {
            std::memcpy(out.data, all.data(), all.size() * sizeof(float));
        }
    }
    return 0;
}
