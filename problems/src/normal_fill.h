// A fast fill of a large tensor with fill_normal's values, bit for bit: for tables of billions of
// elements (68's node table: 2.8e10 normals at PKB's size, a quarter of an hour by fill_normal on one
// core). The same values as fill_normal(tensor, rng), on several threads.
#pragma once

#include "pkbw/core/random.h"
#include "pkbw/core/tensor.h"

namespace pkbw::problems {

// Element i = rng.normal(i) rounded to the tensor's dtype, as fill_normal(tensor, rng) writes it. For
// bf16, f16 and f32 the cosine is cos_two_pi and the rounded value is
// kept only where the error bound cannot move it across a rounding boundary (else rng.normal(i) decides);
// other dtypes draw rng.normal(i). Splits the tensor over up to `max_threads` threads (0: the machine's
// hardware threads) where it is large enough to pay for them.
void fill_normal_fast(Tensor& tensor, const CounterRng& rng, unsigned max_threads = 0);

// cos(2 pi u) for u in [0, 1): u reduced by the cosine's symmetries (exact in double), then a Taylor
// polynomial on [0, pi/2]. Within 2^-49 of std::cos(2.0 * pi * u) (whose argument is itself rounded).
double cos_two_pi(double u);

} // namespace pkbw::problems
