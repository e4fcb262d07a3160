// Host oracle for PKB problem 19: the same fp32 arithmetic as the kernel (absmax / 448, x / s), the
// e4m3 rounding from core, then host all-gathers of values and scales.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const std::int64_t block = static_cast<std::int64_t>(ctx.param("block_size", 128));
    const std::int64_t count = x.numel();
    const std::int64_t blocks = count / block;
    const std::size_t size = pkbw::element_size(x.dtype);
    const auto* xb = static_cast<const std::byte*>(x.data);
    std::vector<std::uint8_t> y(static_cast<std::size_t>(count));
    std::vector<float> s(static_cast<std::size_t>(blocks));
    for (std::int64_t b = 0; b < blocks; ++b) {
        float amax = 0.f;
        for (std::int64_t i = b * block; i < (b + 1) * block; ++i) {
            amax = std::max(amax, std::fabs(pkbw::element_to_f32(x.dtype, xb + i * size)));
        }
        const float scale = amax / 448.0f;
        const float safe = scale == 0.f ? 1.f : scale;
        for (std::int64_t i = b * block; i < (b + 1) * block; ++i) {
            y[i] = pkbw::f32_to_e4m3(pkbw::element_to_f32(x.dtype, xb + i * size) / safe);
        }
        s[b] = scale;
    }
    ctx.all_gather_host(y.data(), y.size(), ctx.output(0).data);
    ctx.all_gather_host(s.data(), s.size() * sizeof(float), ctx.output(1).data);
    return 0;
}
