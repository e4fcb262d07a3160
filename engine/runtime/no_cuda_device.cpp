// Linked when pkbw is built without CUDA: the cuda backend reports itself unavailable.
#include "device.h"
#include "pkbw/core/status.h"

namespace pkbw::engine {

std::unique_ptr<Device> make_cuda_device(int, Rendezvous&) {
    throw DeviceError(status::kKindEnvironment, "this pkbw was built without CUDA; use --backend host");
}

bool cuda_backend_built() {
    return false;
}

std::size_t cuda_device_memory_bytes(int) {
    return 0;
}

} // namespace pkbw::engine
