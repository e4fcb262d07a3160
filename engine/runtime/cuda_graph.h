// The cuda backend's CapturedCalls (device.h): stream capture into a CUDA graph, instantiated once and
// replayed per block (docs/perf.md "The graph figure").
#pragma once

#include "device.h"

namespace pkbw::engine {

// Captures what `enqueue` queues on `stream` (a cudaStream_t) in the calling thread's capture mode, so
// that a call which synchronises, allocates or touches the legacy stream fails the capture instead of
// running. Throws DeviceError("capture", why); leaves the stream out of capture either way.
std::unique_ptr<CapturedCalls> capture_cuda_graph(void* stream, const std::function<void()>& enqueue);

} // namespace pkbw::engine
