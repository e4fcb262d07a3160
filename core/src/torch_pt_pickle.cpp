#include "torch_pt_pickle.h"

#include "pkbw/core/error.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>

namespace pkbw::torch_pt {
namespace {

// Opcodes accepted; every other byte is refused by name or number.
enum Op : std::uint8_t {
    MARK = '(',
    STOP = '.',
    POP = '0',
    BINFLOAT = 'G',
    BININT = 'J',
    BININT1 = 'K',
    BININT2 = 'M',
    NONE = 'N',
    BINPERSID = 'Q',
    REDUCE = 'R',
    BINUNICODE = 'X',
    APPEND = 'a',
    BUILD = 'b',
    GLOBAL = 'c',
    APPENDS = 'e',
    BINGET = 'h',
    LONG_BINGET = 'j',
    BINPUT = 'q',
    LONG_BINPUT = 'r',
    SETITEM = 's',
    TUPLE = 't',
    SETITEMS = 'u',
    EMPTY_DICT = '}',
    EMPTY_LIST = ']',
    EMPTY_TUPLE = ')',
    PROTO = 0x80,
    TUPLE1 = 0x85,
    TUPLE2 = 0x86,
    TUPLE3 = 0x87,
    NEWTRUE = 0x88,
    NEWFALSE = 0x89,
    LONG1 = 0x8a,
    SHORT_BINUNICODE = 0x8c,
    BINUNICODE8 = 0x8d,
    STACK_GLOBAL = 0x93,
    MEMOIZE = 0x94,
    FRAME = 0x95,
};

class Unpickler {
public:
    Unpickler(std::span<const std::byte> bytes, const std::string& source)
        : bytes_(bytes)
        , source_(source) {}

    Unpickled run();

private:
    // One opcode each group knows: true when it was this group's (run() refuses what no group takes).
    bool push_scalar(std::uint8_t op);
    bool build_container(std::uint8_t op);
    bool use_memo(std::uint8_t op);
    bool call(std::uint8_t op);
    [[noreturn]] void fail(const std::string& what) const {
        throw FormatError(source_ + ": pickle byte " + std::to_string(op_pos_) + ": " + what);
    }
    std::span<const std::byte> take(std::uint64_t n, const char* what) {
        if (n > bytes_.size() - pos_) {
            fail(std::string(what) + " of " + std::to_string(n) + " bytes runs past the end of the pickle (" +
                 std::to_string(bytes_.size() - pos_) + " bytes left)");
        }
        auto out = bytes_.subspan(pos_, n);
        pos_ += n;
        return out;
    }
    std::uint64_t uint_le(int width, const char* what) {
        const auto b = take(width, what);
        std::uint64_t v = 0;
        for (int i = width - 1; i >= 0; --i) {
            v = (v << 8) | std::to_integer<std::uint64_t>(b[i]);
        }
        return v;
    }
    std::string text(std::uint64_t n, const char* what) {
        const auto b = take(n, what);
        return std::string(reinterpret_cast<const char*>(b.data()), b.size());
    }
    std::string line(const char* what) {
        std::string out;
        while (true) {
            if (pos_ >= bytes_.size()) {
                fail(std::string(what) + " has no terminating newline");
            }
            const char c = static_cast<char>(bytes_[pos_++]);
            if (c == '\n') {
                return out;
            }
            if (out.size() >= 256) {
                fail(std::string(what) + " is longer than 256 characters");
            }
            out += c;
        }
    }

    Value* make(ValueKind kind) {
        auto& v = out_.arena.emplace_back();
        v.kind = kind;
        return &v;
    }
    Value* pop(const char* op) {
        if (stack_.size() <= mark_floor()) {
            fail(std::string(op) + " on an empty stack");
        }
        Value* v = stack_.back();
        stack_.pop_back();
        return v;
    }
    Value* top(const char* op) {
        if (stack_.size() <= mark_floor()) {
            fail(std::string(op) + " on an empty stack");
        }
        return stack_.back();
    }
    std::size_t mark_floor() const { return marks_.empty() ? 0 : marks_.back(); }
    // The values pushed since the last MARK, which is removed.
    std::vector<Value*> pop_mark(const char* op) {
        if (marks_.empty()) {
            fail(std::string(op) + " without a MARK");
        }
        const std::size_t floor = marks_.back();
        marks_.pop_back();
        std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(floor), stack_.end());
        stack_.resize(floor);
        return items;
    }
    Value* tuple(std::vector<Value*> items) {
        Value* v = make(ValueKind::Tuple);
        v->items = std::move(items);
        return v;
    }
    void memo_put(std::uint64_t index) { memo_[index] = top("PUT"); }
    void memo_get(std::uint64_t index) {
        const auto it = memo_.find(index);
        if (it == memo_.end()) {
            fail("memo index " + std::to_string(index) + " was never stored");
        }
        stack_.push_back(it->second);
    }
    void set_items(Value* dict, const std::vector<Value*>& kv, const char* op);
    void push_global(std::string module, std::string name);
    Value* reduce(Value* callable, Value* args);
    Value* persistent_load(Value* pid);
    Value* rebuild_tensor(const std::vector<Value*>& a, bool v3);
    std::vector<std::int64_t> int_tuple(Value* v, const char* what);

    std::span<const std::byte> bytes_;
    const std::string& source_;
    std::uint64_t pos_ = 0, op_pos_ = 0;
    std::vector<Value*> stack_;
    std::vector<std::size_t> marks_;
    std::map<std::uint64_t, Value*> memo_;
    Unpickled out_;
};

bool keys_equal(const Value* a, const Value* b) {
    if (a->kind != b->kind) {
        return false;
    }
    switch (a->kind) {
    case ValueKind::None:
        return true;
    case ValueKind::Bool:
    case ValueKind::Int:
        return a->i == b->i;
    case ValueKind::String:
        return a->s == b->s;
    default:
        return a == b;
    }
}

void Unpickler::set_items(Value* dict, const std::vector<Value*>& kv, const char* op) {
    if (dict->kind != ValueKind::Dict) {
        fail(std::string(op) + " on a value that is not a dict");
    }
    if (kv.size() % 2 != 0) {
        fail(std::string(op) + " with an odd number of items");
    }
    for (std::size_t i = 0; i < kv.size(); i += 2) {
        Value* key = kv[i];
        if (key->kind != ValueKind::String && key->kind != ValueKind::Int && key->kind != ValueKind::Bool &&
            key->kind != ValueKind::None) {
            fail(std::string(op) + ": dict keys other than strings and integers are not supported");
        }
        bool replaced = false;
        for (auto& entry : dict->entries) {
            if (keys_equal(entry.first, key)) {
                entry.second = kv[i + 1]; // Python semantics: the later value wins
                replaced = true;
                break;
            }
        }
        if (!replaced) {
            dict->entries.emplace_back(key, kv[i + 1]);
        }
    }
}

void Unpickler::push_global(std::string module, std::string name) {
    std::string global = module + "." + name;
    if (!allowed_global(global)) {
        fail("refused global " + global +
             " (only torch tensor rebuilders, storage types, dtypes, "
             "collections.OrderedDict and torch.Size are accepted)");
    }
    Value* v = make(ValueKind::Global);
    v->s = std::move(global);
    stack_.push_back(v);
}

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
bool Unpickler::push_scalar(std::uint8_t op) {
    switch (op) {
    case NONE:
        stack_.push_back(make(ValueKind::None));
        return true;
    case NEWTRUE:
    case NEWFALSE: {
        Value* v = make(ValueKind::Bool);
        v->i = op == NEWTRUE;
        stack_.push_back(v);
        return true;
    }
    case BININT:
    case BININT1:
    case BININT2: {
        Value* v = make(ValueKind::Int);
        const int width = op == BININT ? 4 : op == BININT1 ? 1 : 2;
        const auto raw = uint_le(width, "BININT");
        v->i = op == BININT ? static_cast<std::int32_t>(raw) : static_cast<std::int64_t>(raw);
        stack_.push_back(v);
        return true;
    }
    case LONG1: {
        const auto n = uint_le(1, "LONG1");
        if (n > 8) {
            fail("LONG1 integer of " + std::to_string(n) + " bytes does not fit in 64 bits");
        }
        const auto b = take(n, "LONG1");
        std::uint64_t raw = 0;
        for (std::size_t i = n; i-- > 0;) {
            raw = (raw << 8) | std::to_integer<std::uint64_t>(b[i]);
        }
        if (n > 0 && n < 8 && (std::to_integer<std::uint8_t>(b[n - 1]) & 0x80)) {
            raw |= ~std::uint64_t{0} << (8 * n); // sign-extend
        }
        Value* v = make(ValueKind::Int);
        v->i = static_cast<std::int64_t>(raw);
        stack_.push_back(v);
        return true;
    }
    case BINFLOAT: {
        Value* v = make(ValueKind::Float);
        const auto b = take(8, "BINFLOAT");
        std::uint64_t raw = 0;
        for (int i = 0; i < 8; ++i) {
            raw = (raw << 8) | std::to_integer<std::uint64_t>(b[i]); // big-endian
        }
        v->f = std::bit_cast<double>(raw);
        stack_.push_back(v);
        return true;
    }
    case BINUNICODE:
    case SHORT_BINUNICODE:
    case BINUNICODE8: {
        const int width = op == BINUNICODE ? 4 : op == SHORT_BINUNICODE ? 1 : 8;
        const auto n = uint_le(width, "string length");
        Value* v = make(ValueKind::String);
        v->s = text(n, "string");
        stack_.push_back(v);
        return true;
    }
    default:
        return false;
    }
}

// Tuples, lists and dicts, and the opcodes that fill them.
bool Unpickler::build_container(std::uint8_t op) {
    switch (op) {
    case EMPTY_TUPLE:
        stack_.push_back(tuple({}));
        return true;
    case TUPLE1:
    case TUPLE2:
    case TUPLE3: {
        const std::size_t n = op - TUPLE1 + 1u;
        std::vector<Value*> items(n);
        for (std::size_t i = n; i-- > 0;) {
            items[i] = pop("TUPLE");
        }
        stack_.push_back(tuple(std::move(items)));
        return true;
    }
    case TUPLE:
        stack_.push_back(tuple(pop_mark("TUPLE")));
        return true;
    case EMPTY_LIST:
        stack_.push_back(make(ValueKind::List));
        return true;
    case EMPTY_DICT:
        stack_.push_back(make(ValueKind::Dict));
        return true;
    case APPEND: {
        Value* item = pop("APPEND");
        Value* list = top("APPEND");
        if (list->kind != ValueKind::List) {
            fail("APPEND to a value that is not a list");
        }
        list->items.push_back(item);
        return true;
    }
    case APPENDS: {
        auto items = pop_mark("APPENDS");
        Value* list = top("APPENDS");
        if (list->kind != ValueKind::List) {
            fail("APPENDS to a value that is not a list");
        }
        list->items.insert(list->items.end(), items.begin(), items.end());
        return true;
    }
    case SETITEM: {
        Value* value = pop("SETITEM");
        Value* key = pop("SETITEM");
        set_items(top("SETITEM"), {key, value}, "SETITEM");
        return true;
    }
    case SETITEMS: {
        auto kv = pop_mark("SETITEMS");
        set_items(top("SETITEMS"), kv, "SETITEMS");
        return true;
    }
    default:
        return false;
    }
}

// The memo: PUT stores the top of the stack under an index, GET pushes it again.
bool Unpickler::use_memo(std::uint8_t op) {
    switch (op) {
    case BINPUT:
        memo_put(uint_le(1, "BINPUT"));
        return true;
    case LONG_BINPUT:
        memo_put(uint_le(4, "LONG_BINPUT"));
        return true;
    case MEMOIZE:
        memo_put(memo_.size());
        return true;
    case BINGET:
        memo_get(uint_le(1, "BINGET"));
        return true;
    case LONG_BINGET:
        memo_get(uint_le(4, "LONG_BINGET"));
        return true;
    default:
        return false;
    }
}

// Globals (allowed ones only), REDUCE of the accepted calls, persistent ids (storages) and BUILD
// with an empty state.
bool Unpickler::call(std::uint8_t op) {
    switch (op) {
    case GLOBAL: {
        std::string module = line("GLOBAL module");
        std::string name = line("GLOBAL name");
        push_global(std::move(module), std::move(name));
        return true;
    }
    case STACK_GLOBAL: {
        Value* name = pop("STACK_GLOBAL");
        Value* module = pop("STACK_GLOBAL");
        if (name->kind != ValueKind::String || module->kind != ValueKind::String) {
            fail("STACK_GLOBAL of values that are not strings");
        }
        push_global(module->s, name->s);
        return true;
    }
    case REDUCE: {
        Value* args = pop("REDUCE");
        Value* callable = pop("REDUCE");
        stack_.push_back(reduce(callable, args));
        return true;
    }
    case BINPERSID:
        stack_.push_back(persistent_load(pop("BINPERSID")));
        return true;
    case BUILD: {
        // Only the empty state some containers carry; BUILD never sets attributes here.
        Value* state = pop("BUILD");
        top("BUILD");
        if (!(state->kind == ValueKind::None || (state->kind == ValueKind::Dict && state->entries.empty()))) {
            fail("refused BUILD with a non-empty state (object attributes are not supported)");
        }
        return true;
    }
    default:
        return false;
    }
}

Unpickled Unpickler::run() {
    while (true) {
        op_pos_ = pos_;
        if (pos_ >= bytes_.size()) {
            fail("pickle ends without STOP");
        }
        const auto op = std::to_integer<std::uint8_t>(bytes_[pos_++]);
        switch (op) {
        case PROTO: {
            const auto version = uint_le(1, "PROTO");
            if (version > 5) {
                fail("pickle protocol " + std::to_string(version) + " is not supported");
            }
            continue;
        }
        case FRAME:
            uint_le(8, "FRAME");
            continue; // framing only groups opcodes
        case MARK:
            marks_.push_back(stack_.size());
            continue;
        case STOP: {
            Value* root = pop("STOP");
            if (!stack_.empty() || !marks_.empty()) {
                fail("STOP with values left on the stack");
            }
            out_.root = root;
            return std::move(out_);
        }
        case POP:
            pop("POP");
            continue;
        default:
            break;
        }
        if (!push_scalar(op) && !build_container(op) && !use_memo(op) && !call(op)) {
            const char* name = refused_op_name(op);
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02x", op);
            fail(std::string("refused opcode ") + (name ? name : "unknown") + " (" + hex + ")");
        }
    }
}

} // namespace

Unpickled unpickle(std::span<const std::byte> pickle, const std::string& source) {
    return Unpickler(pickle, source).run();
}

} // namespace pkbw::torch_pt
