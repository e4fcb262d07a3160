// Running a pickle: the opcodes torch_pt accepts, one group at a time (torch_pt_unpickler.h); what
// an accepted call builds is torch_pt_rebuild.cpp's.
#include "torch_pt_unpickler.h"

#include <bit>
#include <cstdio>
#include <cstring>

namespace pkbw::torch_pt {
namespace detail {
namespace {

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

} // namespace

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

} // namespace detail

Unpickled unpickle(std::span<const std::byte> pickle, const std::string& source) {
    return detail::Unpickler(pickle, source).run();
}

} // namespace pkbw::torch_pt
