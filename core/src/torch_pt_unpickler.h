// The pickle machine torch_pt reads data.pkl with (docs/pkb-interop.md): the opcodes it accepts and
// the Unpickler's state. Private to core: torch_pt_pickle.cpp runs the opcodes, torch_pt_rebuild.cpp
// builds what the accepted calls make (tensors, storages, OrderedDict, torch.Size).
#pragma once

#include "pkbw/core/error.h"
#include "torch_pt_pickle.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace pkbw::torch_pt::detail {

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

} // namespace pkbw::torch_pt::detail
