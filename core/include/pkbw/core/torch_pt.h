// Reading torch.save files (PyTorch >= 1.6 zip serialization) without Python: the rank_<r>.pt files
// PKB writes. The archive's data.pkl is interpreted by a restricted unpickler that never calls
// anything: only tensors (typed or untyped storages, any offset and strides), tuples, lists, dicts,
// OrderedDicts, torch.Size, None, booleans, integers, floats and strings are accepted; any other
// global, call or opcode is a pkbw::FormatError naming it. docs/pkb-interop.md lists the subset.
#pragma once

#include "pkbw/core/outputs.h"

#include <cstddef>
#include <span>
#include <string>

namespace pkbw {

// Reads `path`. Tensors view the file's mapping when their bytes are aligned (otherwise copy), and
// are views with the saved offset and strides (non-contiguous tensors stay non-contiguous). The
// value maps to names as outputs.h says: PKB's {'output_0': ...} dict gives output_0, output_1, ...;
// a bare tensor gives "output"; nested sequences "<parent>[j]"; nested dicts "<parent>.<key>".
// None, torch.Size, numbers, strings and empty containers become JSON texts in OutputSet::values.
// Errors are pkbw::FormatError naming the file and the zip entry or pickle byte.
OutputSet read_torch_pt(const std::string& path);
// The same from an in-memory image (tests, fuzzing); `source_name` stands for the file in messages.
// Tensors own copies of their bytes.
OutputSet parse_torch_pt(std::span<const std::byte> bytes, const std::string& source_name);

} // namespace pkbw
