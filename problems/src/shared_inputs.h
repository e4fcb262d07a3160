// Inputs that PKB draws once (seeded with rank 0) and slices per rank: rank r's tensor holds the
// elements [offset, offset + numel) of one shared draw. With a counter-based generator the slice is
// drawn directly at its global indices, so no rank materialises the full tensor.
#pragma once

#include "pkbw/core/error.h"
#include "pkbw/core/random.h"
#include "pkbw/core/tensor.h"

#include <cstdint>

namespace pkbw::problems {

template <class F>
void fill_slice(Tensor& tensor, std::int64_t offset, F&& value_at_global) {
    if (!tensor.is_contiguous()) {
        throw Error("problem input " + tensor.describe() + " is not contiguous");
    }
    const std::size_t size = dtype_size(tensor.dtype());
    std::byte* data = tensor.mutable_data();
    const std::int64_t count = tensor.numel();
    for (std::int64_t i = 0; i < count; ++i) {
        f64_to_element(tensor.dtype(), value_at_global(static_cast<std::uint64_t>(offset + i)),
                       data + i * size);
    }
}

// Standard normal (times `scale`) at global indices offset.. of the shared draw.
inline void fill_normal_slice(Tensor& tensor, const CounterRng& rng, std::int64_t offset,
                              double scale = 1.0) {
    fill_slice(tensor, offset, [&](std::uint64_t i) { return scale * rng.normal(i); });
}

// Exact-mode values (k/4, k uniform in [-a, a], as fill_exact) at global indices offset..
inline void fill_exact_slice(Tensor& tensor, const CounterRng& rng, std::int64_t offset, int amplitude) {
    fill_slice(tensor, offset, [&](std::uint64_t i) {
        return 0.25 * static_cast<double>(rng.integer(i, -amplitude, amplitude + 1));
    });
}

} // namespace pkbw::problems
