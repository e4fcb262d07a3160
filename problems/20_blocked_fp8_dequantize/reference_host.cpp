// Host oracle for PKB problem 20: y * s in fp32 (the product of two narrow values is the same in
// fp32 on every machine), then the toolkit's host all-to-all.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

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
    const std::vector<long long> chunks(static_cast<std::size_t>(ctx.world_size),
                                        static_cast<long long>(x.size()) / ctx.world_size);
    const std::vector<std::byte> received = pkbw::tk::all_to_all_v_host(ctx, x.data(), chunks, sizeof(float));
    std::memcpy(out.data, received.data(), received.size());
    return 0;
}
