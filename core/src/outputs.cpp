#include "pkbw/core/outputs.h"

namespace pkbw {

const Tensor* OutputSet::find(const std::string& name) const {
    for (const auto& entry : tensors) {
        if (entry.name == name) {
            return &entry.tensor;
        }
    }
    return nullptr;
}

} // namespace pkbw
