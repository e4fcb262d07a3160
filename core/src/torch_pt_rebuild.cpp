// The calls an accepted pickle may make, built into values (torch_pt_unpickler.h): the tensor
// rebuilders with their storages (persistent ids), nn.Parameter's data, OrderedDict() and torch.Size.
// Every other call is refused by name.
#include "torch_pt_unpickler.h"

#include <optional>

namespace pkbw::torch_pt::detail {

std::vector<std::int64_t> Unpickler::int_tuple(Value* v, const char* what) {
    if (v->kind != ValueKind::Tuple && v->kind != ValueKind::List && v->kind != ValueKind::Size) {
        fail(std::string(what) + " is not a tuple of integers");
    }
    if (v->kind == ValueKind::Size) {
        return v->ints;
    }
    std::vector<std::int64_t> out;
    for (const Value* item : v->items) {
        if (item->kind != ValueKind::Int) {
            fail(std::string(what) + " holds a non-integer");
        }
        out.push_back(item->i);
    }
    return out;
}

Value* Unpickler::rebuild_tensor(const std::vector<Value*>& a, bool v3) {
    const char* fn = v3 ? "_rebuild_tensor_v3" : "_rebuild_tensor_v2";
    const std::size_t base = v3 ? 7 : 6;
    if (a.size() != base && a.size() != base + 1) {
        fail(std::string(fn) + " with " + std::to_string(a.size()) + " arguments");
    }
    if (a[0]->kind != ValueKind::StorageRef) {
        fail(std::string(fn) + ": first argument is not a storage");
    }
    if (a[1]->kind != ValueKind::Int || a[1]->i < 0) {
        fail(std::string(fn) + ": storage offset is not a non-negative integer");
    }
    if (a[5]->kind != ValueKind::Dict || !a[5]->entries.empty()) {
        fail(std::string(fn) + ": backward hooks are not an empty OrderedDict");
    }
    Value* t = make(ValueKind::Tensor);
    t->storage = a[0];
    t->offset = a[1]->i;
    t->ints = int_tuple(a[2], "tensor size");
    t->stride = int_tuple(a[3], "tensor stride");
    t->dtype = a[0]->dtype;
    if (v3) {
        const auto d = a[6]->kind == ValueKind::Global ? dtype_global(a[6]->s) : std::nullopt;
        if (!d) {
            fail("_rebuild_tensor_v3: dtype argument is not a supported torch dtype");
        }
        t->dtype = *d;
    }
    if (t->ints.size() != t->stride.size()) {
        fail(std::string(fn) + ": size and stride have different lengths");
    }
    if (a.size() == base + 1) {
        const Value* meta = a[base];
        // Metadata carries flags such as a negative or conjugate bit that change what the bytes mean.
        if (!(meta->kind == ValueKind::None || (meta->kind == ValueKind::Dict && meta->entries.empty()))) {
            fail(std::string(fn) + ": tensor metadata (conjugate/negative bits, ...) is not supported");
        }
    }
    return t;
}

Value* Unpickler::reduce(Value* callable, Value* args) {
    if (callable->kind != ValueKind::Global) {
        fail("REDUCE of a value that is not an allowed global");
    }
    if (args->kind != ValueKind::Tuple) {
        fail("REDUCE of " + callable->s + " with arguments that are not a tuple");
    }
    const auto& a = args->items;
    const std::string& fn = callable->s;
    if (fn == "torch._utils._rebuild_tensor_v2" || fn == "torch._utils._rebuild_tensor_v3") {
        return rebuild_tensor(a, fn.back() == '3');
    }
    if (fn == "torch._utils._rebuild_parameter") {
        // nn.Parameter(data, requires_grad, hooks): the data is all an output needs.
        if (a.size() != 3 || a[0]->kind != ValueKind::Tensor) {
            fail("_rebuild_parameter with unexpected arguments");
        }
        return a[0];
    }
    if (fn == "collections.OrderedDict") {
        if (!a.empty()) {
            fail("collections.OrderedDict called with arguments (only OrderedDict() is accepted)");
        }
        Value* d = make(ValueKind::Dict);
        d->ordered_dict = true;
        return d;
    }
    if (fn == "torch.Size") {
        if (a.size() != 1) {
            fail("torch.Size with " + std::to_string(a.size()) + " arguments");
        }
        Value* s = make(ValueKind::Size);
        s->ints = int_tuple(a[0], "torch.Size argument");
        return s;
    }
    fail("refused call of " + fn +
         " (REDUCE is accepted only for tensor rebuilders, OrderedDict and "
         "torch.Size)");
}

Value* Unpickler::persistent_load(Value* pid) {
    const auto& a = pid->items;
    if (pid->kind != ValueKind::Tuple || a.size() != 5 || a[0]->kind != ValueKind::String ||
        a[0]->s != "storage") {
        fail("persistent id is not ('storage', type, key, location, numel)");
    }
    const auto dtype = a[1]->kind == ValueKind::Global ? storage_dtype(a[1]->s) : std::nullopt;
    if (!dtype) {
        fail("persistent id names an unsupported storage type" +
             (a[1]->kind == ValueKind::Global ? " " + a[1]->s : std::string()));
    }
    if (a[2]->kind != ValueKind::String || a[3]->kind != ValueKind::String || a[4]->kind != ValueKind::Int ||
        a[4]->i < 0) {
        fail("persistent id ('storage', ...) has a malformed key, location or numel");
    }
    Value* s = make(ValueKind::StorageRef);
    s->dtype = *dtype;
    s->s = a[2]->s;
    s->location = a[3]->s;
    s->numel = a[4]->i;
    return s;
}

// None, booleans, integers, floats and strings: pushed as values.

} // namespace pkbw::torch_pt::detail
