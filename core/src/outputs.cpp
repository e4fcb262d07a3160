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

const OutputLength* OutputSet::find_length(const std::string& name) const {
    const auto it = lengths.find(name);
    return it == lengths.end() ? nullptr : &it->second;
}

} // namespace pkbw
