#include "pkbw/core/torch_pt.h"

#include "pkbw/core/error.h"
#include "torch_pt_pickle.h"
#include "torch_pt_zip.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace pkbw {
namespace {

using torch_pt::Value;
using torch_pt::ValueKind;

// Nested containers deeper than this are refused (PKB outputs nest two or three levels; a cycle
// built through the memo would otherwise recurse forever).
constexpr int kMaxDepth = 64;

// One zip entry's bytes inside a larger storage (the file mapping), so that Tensor::view checks a
// tensor's reach against its own entry rather than the whole file.
class SliceStorage final : public Storage {
public:
    SliceStorage(std::shared_ptr<Storage> parent, std::size_t offset, std::size_t size)
        : parent_(std::move(parent))
        , offset_(offset)
        , size_(size) {}
    const std::byte* data() const override { return parent_->data() + offset_; }
    std::byte* mutable_data() override { return nullptr; }
    std::size_t size() const override { return size_; }

private:
    std::shared_ptr<Storage> parent_;
    std::size_t offset_, size_;
};

class Loader {
public:
    // `file` is the mapping `bytes` comes from, or null when the bytes are borrowed (then copied).
    Loader(std::span<const std::byte> bytes, std::shared_ptr<Storage> file, const std::string& source)
        : zip_(bytes, source)
        , file_(std::move(file))
        , source_(source) {
        find_prefix();
    }

    OutputSet load() {
        const auto* pkl = zip_.find(prefix_ + "/data.pkl");
        check_byteorder();
        const auto unpickled = torch_pt::unpickle(zip_.read(*pkl), source_ + ": " + pkl->name);
        OutputSet out;
        const Value* root = unpickled.root;
        switch (root->kind) {
        case ValueKind::Dict:
            if (root->entries.empty()) {
                emit(root, "output", 0, out);
            }
            for (const auto& [key, value] : root->entries) {
                emit(value, key_text(key), 1, out);
            }
            break;
        case ValueKind::Tuple:
        case ValueKind::List:
            if (root->items.empty()) {
                emit(root, "output", 0, out);
            }
            for (std::size_t i = 0; i < root->items.size(); ++i) {
                emit(root->items[i], "output_" + std::to_string(i), 1, out);
            }
            break;
        default:
            emit(root, "output", 0, out);
        }
        return out;
    }

private:
    void find_prefix() {
        const std::string suffix = "/data.pkl";
        for (const auto& e : zip_.entries()) {
            if (e.name.size() > suffix.size() && e.name.ends_with(suffix) &&
                e.name.find('/') == e.name.size() - suffix.size()) {
                if (!prefix_.empty()) {
                    throw FormatError(source_ + ": two pickles in one archive ('" + prefix_ +
                                      "/data.pkl' and '" + e.name + "')");
                }
                prefix_ = e.name.substr(0, e.name.size() - suffix.size());
            }
        }
        if (prefix_.empty()) {
            throw FormatError(source_ +
                              ": zip archive has no '<archive>/data.pkl' entry; not a torch.save file");
        }
    }

    void check_byteorder() {
        const auto* entry = zip_.find(prefix_ + "/byteorder");
        if (entry == nullptr) {
            return; // written since PyTorch 2.1; older files are little-endian (x86 / ARM)
        }
        const auto bytes = zip_.read(*entry);
        const std::string order(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        if (order != "little") {
            throw FormatError(source_ + ": " + entry->name + " is '" + order.substr(0, 16) +
                              "'; only little-endian archives are supported");
        }
    }

    std::shared_ptr<Storage> storage_for(const Value* ref) {
        const auto found = storages_.find(ref->s);
        if (found != storages_.end()) {
            return found->second;
        }
        const std::string name = prefix_ + "/data/" + ref->s;
        const auto* entry = zip_.find(name);
        if (entry == nullptr) {
            throw FormatError(source_ + ": storage key '" + ref->s + "' has no entry '" + name + "'");
        }
        const auto bytes = zip_.read(*entry);
        const std::size_t element = dtype_size(ref->dtype);
        if (static_cast<std::uint64_t>(ref->numel) > bytes.size() / element ||
            static_cast<std::uint64_t>(ref->numel) * element != bytes.size()) {
            throw FormatError(source_ + ": entry '" + name + "' holds " + std::to_string(bytes.size()) +
                              " bytes, but its storage is " + std::to_string(ref->numel) + " elements of " +
                              std::string(dtype_name(ref->dtype)));
        }
        std::shared_ptr<Storage> storage;
        const auto address = reinterpret_cast<std::uintptr_t>(bytes.data());
        if (file_ && address % alignof(std::max_align_t) == 0) {
            const auto offset = static_cast<std::size_t>(bytes.data() - file_->data());
            storage = std::make_shared<SliceStorage>(file_, offset, bytes.size());
        } else { // borrowed or misaligned bytes: copy, so elements can be read in place
            storage = Storage::allocate(bytes.size());
            if (!bytes.empty()) {
                std::memcpy(storage->mutable_data(), bytes.data(), bytes.size());
            }
        }
        storages_.emplace(ref->s, storage);
        return storage;
    }

    Tensor tensor_for(const Value* t, const std::string& name) {
        const auto storage = storage_for(t->storage);
        const auto element = static_cast<std::int64_t>(dtype_size(t->dtype));
        const std::int64_t capacity = static_cast<std::int64_t>(storage->size()) / element;
        const auto bad = [&](const std::string& why) {
            return FormatError(source_ + ": tensor '" + name + "' (" + std::string(dtype_name(t->dtype)) +
                               shape_to_string(t->ints) + " in storage '" + t->storage->s + "'): " + why);
        };
        // The highest element reached: offset + sum((size - 1) * stride), overflow-checked.
        std::int64_t reach = t->offset;
        bool empty = false;
        for (std::size_t i = 0; i < t->ints.size(); ++i) {
            if (t->ints[i] < 0 || t->stride[i] < 0) {
                throw bad("negative size or stride");
            }
            empty = empty || t->ints[i] == 0;
        }
        for (std::size_t i = 0; i < t->ints.size() && !empty; ++i) {
            std::int64_t step = 0;
            if (__builtin_mul_overflow(t->ints[i] - 1, t->stride[i], &step) ||
                __builtin_add_overflow(reach, step, &reach)) {
                throw bad("size and stride overflow");
            }
        }
        if (empty ? t->offset > capacity : reach >= capacity) {
            throw bad("reaches element " + std::to_string(reach) + " of a storage of " +
                      std::to_string(capacity) + " elements");
        }
        try {
            return Tensor::view(storage, t->dtype, t->ints, t->stride,
                                static_cast<std::size_t>(t->offset * element));
        } catch (const FormatError&) {
            throw;
        } catch (const Error& e) {
            throw bad(e.what());
        }
    }

    std::string key_text(const Value* key) const {
        switch (key->kind) {
        case ValueKind::String:
            return key->s;
        case ValueKind::Int:
            return std::to_string(key->i);
        case ValueKind::Bool:
            return key->i ? "True" : "False";
        default:
            return "None";
        }
    }

    void put(OutputSet& out, const std::string& name, std::string json) {
        if (!names_.insert(name).second) {
            throw FormatError(source_ + ": two outputs are both named '" + name + "'");
        }
        out.values[name] = std::move(json);
    }

    static std::string dump(const nlohmann::json& j) {
        return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }

    void emit(const Value* v, const std::string& name, int depth, OutputSet& out) {
        if (depth > kMaxDepth) {
            throw FormatError(source_ + ": output '" + name.substr(0, 200) + "...' nests deeper than " +
                              std::to_string(kMaxDepth) + " levels");
        }
        switch (v->kind) {
        case ValueKind::Tensor: {
            if (!names_.insert(name).second) {
                throw FormatError(source_ + ": two outputs are both named '" + name + "'");
            }
            out.add(name, tensor_for(v, name));
            return;
        }
        case ValueKind::Tuple:
        case ValueKind::List:
            if (v->items.empty()) {
                put(out, name, "[]");
            }
            for (std::size_t j = 0; j < v->items.size(); ++j) {
                emit(v->items[j], name + "[" + std::to_string(j) + "]", depth + 1, out);
            }
            return;
        case ValueKind::Dict:
            if (v->entries.empty()) {
                put(out, name, "{}");
            }
            for (const auto& [key, value] : v->entries) {
                emit(value, name + "." + key_text(key), depth + 1, out);
            }
            return;
        case ValueKind::None:
            put(out, name, "null");
            return;
        case ValueKind::Bool:
            put(out, name, v->i ? "true" : "false");
            return;
        case ValueKind::Int:
            put(out, name, std::to_string(v->i));
            return;
        case ValueKind::Float:
            put(out, name, dump(v->f));
            return; // NaN and infinities become null
        case ValueKind::String:
            put(out, name, dump(v->s));
            return;
        case ValueKind::Size:
            put(out, name, dump(v->ints));
            return;
        case ValueKind::Global:
        case ValueKind::StorageRef:
            throw FormatError(source_ + ": output '" + name + "' is a bare " +
                              (v->kind == ValueKind::Global ? "global " + v->s : "storage") +
                              ", not a tensor or a plain value");
        }
    }

    torch_pt::ZipArchive zip_;
    std::shared_ptr<Storage> file_;
    const std::string& source_;
    std::string prefix_;
    std::map<std::string, std::shared_ptr<Storage>> storages_;
    std::set<std::string> names_;
};

} // namespace

OutputSet read_torch_pt(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        throw FormatError(path + ": not a readable file");
    }
    const auto file = Storage::map_file(path);
    return Loader({file->data(), file->size()}, file, path).load();
}

OutputSet parse_torch_pt(std::span<const std::byte> bytes, const std::string& source_name) {
    return Loader(bytes, nullptr, source_name).load();
}

} // namespace pkbw
