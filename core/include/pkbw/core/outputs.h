// A rank's output: the leaves of a possibly nested value (a tensor, a tuple or list, a dict) as
// named tensors plus non-tensor leaves (None, torch.Size, numbers) kept as JSON. Names follow PKB's
// comparison paths; docs/formats.md gives the mapping:
//   single tensor             -> "output"
//   tuple/list element i      -> "output_<i>"     (PKB's save_tensor naming)
//   nested sequence element j -> "<parent>[<j>]"
//   dict entry k              -> "<parent>.<k>", or "<k>" when the dict is the whole output
#pragma once

#include "pkbw/core/tensor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pkbw {

// A variable-length output (docs/solution-abi.md "Variable-length outputs"): the solution was given
// `bound` rows (the leading dimension allocated) and reported how many it filled. The output's tensor
// holds only that valid prefix; the unused tail is never read. A reported length outside 0..bound (or
// none, kLengthNotReported) leaves the tensor with 0 rows and fails the comparison naming the value.
inline constexpr std::int64_t kLengthNotReported = -1;
struct OutputLength {
    std::int64_t bound = 0;
    std::int64_t reported = 0;
    bool valid() const { return reported >= 0 && reported <= bound; }
};

struct NamedTensor {
    std::string name;
    Tensor tensor;
};

struct OutputSet {
    std::vector<NamedTensor> tensors; // in output order
    // Non-tensor leaves, by name, as JSON text ("null", "[1024, 1024]", "3").
    std::map<std::string, std::string> values;
    // Variable-length outputs, by tensor name (absent: a fixed-shape output).
    std::map<std::string, OutputLength> lengths;

    const Tensor* find(const std::string& name) const;
    const OutputLength* find_length(const std::string& name) const;
    void add(std::string name, Tensor tensor) { tensors.push_back({std::move(name), std::move(tensor)}); }
    void add(std::string name, Tensor tensor, OutputLength length) {
        lengths[name] = length;
        add(std::move(name), std::move(tensor));
    }
};

} // namespace pkbw
