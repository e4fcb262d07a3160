// The launchers of cuda_checks.cu's kernels, for cuda_device.cpp (compiled by the host compiler).
#pragma once

#include "pkbw/dtype_enum.h"

#include <cstddef>
#include <cuda_runtime_api.h>

namespace pkbw::engine {

// Adds to counts[0] (device memory) the elements of `count` where `candidate` fails PKB's rule against
// `reference`, and to counts[1] the gross ones among them (mismatch_rule.h); queued on `stream`.
cudaError_t launch_count_mismatches(const void* reference, const void* candidate, DType dtype,
                                    std::size_t count, float atol, float rtol, unsigned long long* counts,
                                    cudaStream_t stream);

// Sets touched[k] (device memory) to 1 when an 8-byte word of slot k of [base, base + slots x
// slot_bytes) is not all `poison`, and adds slot_fingerprint.h's terms of every word to *sum; one
// launch, queued on `stream`. slot_bytes is a multiple of 8.
cudaError_t launch_scan_slots(const void* base, std::size_t slot_bytes, int slots, unsigned char poison,
                              unsigned int* touched, unsigned long long* sum, cudaStream_t stream);

// One thread spinning `spin_us` by the GPU's global timer.
cudaError_t launch_probe(double spin_us, cudaStream_t stream);

} // namespace pkbw::engine
