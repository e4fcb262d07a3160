// A restricted unpickler for the data.pkl of a torch.save archive. It builds values only: no Python
// object is ever called. GLOBAL / STACK_GLOBAL accept an allowlist of names (tensor rebuilders,
// storage types, dtypes, OrderedDict, torch.Size) and REDUCE calls only the rebuilders, which are
// interpreted here. Everything else is a pkbw::FormatError naming the opcode or the global. Internal
// to core (torch_pt.cpp); docs/pkb-interop.md lists the accepted subset.
#pragma once

#include "pkbw/core/dtype.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace pkbw::torch_pt {

enum class ValueKind { None, Bool, Int, Float, String, Tuple, List, Dict, Size, Global, StorageRef, Tensor };

struct Value {
    ValueKind kind = ValueKind::None;
    bool ordered_dict = false;                      // Dict made by collections.OrderedDict
    std::int64_t i = 0;                             // Int, Bool (0/1)
    double f = 0;                                   // Float
    std::string s;                                  // String; Global: "module.name"; StorageRef: key
    std::vector<Value*> items;                      // Tuple, List
    std::vector<std::pair<Value*, Value*>> entries; // Dict, in insertion order
    std::vector<std::int64_t> ints;                 // Size; Tensor: size
    // StorageRef: the persistent id ('storage', type, key, location, numel).
    DType dtype = DType::U8; // StorageRef: the storage's element type (U8 for UntypedStorage); Tensor: dtype
    std::int64_t numel = 0;  // StorageRef: elements of `dtype`
    std::string location;    // StorageRef: "cpu", "cuda:0", ...
    // Tensor: a view of `storage` at `offset` elements (of the tensor's dtype) with `stride`.
    Value* storage = nullptr;
    std::int64_t offset = 0;
    std::vector<std::int64_t> stride;
};

// Values live in the arena (so that memo references, shared lists and even cycles cost nothing to
// free); `root` is the STOP value.
struct Unpickled {
    std::deque<Value> arena;
    Value* root = nullptr;
};

// The allowlist (torch_pt_pickle_names.cpp). Globals are "module.name".
bool allowed_global(const std::string& global);
std::optional<DType> storage_dtype(const std::string& global); // torch.<X>Storage
std::optional<DType> dtype_global(const std::string& global);  // torch.<dtype>
const char* refused_op_name(std::uint8_t op);                  // nullptr for unnamed bytes

// `source` names the file and entry in error messages ("x.pt: archive/data.pkl").
Unpickled unpickle(std::span<const std::byte> pickle, const std::string& source);

} // namespace pkbw::torch_pt
