// A rank's output: the leaves of a possibly nested value (a tensor, a tuple or list, a dict) as
// named tensors plus non-tensor leaves (None, torch.Size, numbers) kept as JSON. Names follow PKB's
// comparison paths; docs/formats.md gives the mapping:
//   single tensor             -> "output"
//   tuple/list element i      -> "output_<i>"     (PKB's save_tensor naming)
//   nested sequence element j -> "<parent>[<j>]"
//   dict entry k              -> "<parent>.<k>", or "<k>" when the dict is the whole output
#pragma once

#include "pkbw/core/tensor.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pkbw {

struct NamedTensor {
    std::string name;
    Tensor tensor;
};

struct OutputSet {
    std::vector<NamedTensor> tensors; // in output order
    // Non-tensor leaves, by name, as JSON text ("null", "[1024, 1024]", "3").
    std::map<std::string, std::string> values;

    const Tensor* find(const std::string& name) const;
    void add(std::string name, Tensor tensor) { tensors.push_back({std::move(name), std::move(tensor)}); }
};

} // namespace pkbw
