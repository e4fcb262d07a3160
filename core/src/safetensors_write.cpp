// Writing safetensors files (write_safetensors): outputs, values and lengths laid out as
// docs/formats.md ("Per-rank outputs: safetensors") states, written to a temporary file beside the
// destination and renamed into place, so that a reader never sees half a file.
#include "pkbw/core/error.h"
#include "pkbw/core/safetensors.h"
#include "safetensors_format.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <numeric>
#include <unistd.h>
#include <unordered_set>

namespace pkbw {
namespace {

using namespace safetensors_detail;

// A file created beside its destination and renamed over it on commit(); removed if never committed.
class AtomicFile {
public:
    explicit AtomicFile(std::string path)
        : path_(std::move(path)) {
        static std::atomic<unsigned> counter{0};
        for (int attempt = 0; fd_ < 0; ++attempt) {
            temp_ = path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
            fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd_ < 0 && (errno != EEXIST || attempt > 100))
                fail("cannot create temporary file " + temp_);
        }
    }
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile() {
        if (fd_ >= 0)
            ::close(fd_);
        if (!committed_)
            ::unlink(temp_.c_str());
    }

    void write(const void* data, std::size_t size) {
        const char* p = static_cast<const char*>(data);
        while (size > 0) {
            const ssize_t written = ::write(fd_, p, size);
            if (written < 0 && errno == EINTR)
                continue;
            if (written <= 0)
                fail("cannot write");
            p += written;
            size -= static_cast<std::size_t>(written);
        }
    }

    void commit() {
        if (::fsync(fd_) != 0)
            fail("cannot flush");
        const int fd = fd_;
        fd_ = -1;
        if (::close(fd) != 0)
            fail("cannot close");
        if (::rename(temp_.c_str(), path_.c_str()) != 0)
            fail("cannot rename " + temp_ + " into place");
        committed_ = true;
        // Make the rename itself durable; failing here loses nothing already visible, so it is not an error.
        std::string dir = std::filesystem::path(path_).parent_path().string();
        const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd >= 0) {
            ::fsync(dir_fd);
            ::close(dir_fd);
        }
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(path_ + ": " + what + ": " + std::strerror(errno));
    }

    std::string path_;
    std::string temp_;
    int fd_ = -1;
    bool committed_ = false;
};

} // namespace

void write_safetensors(const std::string& path, const OutputSet& outputs,
                       const std::map<std::string, std::string>& metadata) {
    if (metadata.contains(std::string(kValuesKey)))
        throw Error(path + ": __metadata__: key " + json_quote(kValuesKey) +
                    " is reserved for output values");
    if (metadata.contains(std::string(kLengthsKey)))
        throw Error(path + ": __metadata__: key " + json_quote(kLengthsKey) +
                    " is reserved for output lengths");
    for (const auto& [name, length] : outputs.lengths) {
        const Tensor* tensor = outputs.find(name);
        const std::int64_t rows = tensor == nullptr || tensor->shape().empty() ? -1 : tensor->shape()[0];
        if (rows != (length.valid() ? length.reported : 0))
            throw Error(path + ": output length of " + json_quote(name) + " (" +
                        std::to_string(length.reported) + " of " + std::to_string(length.bound) +
                        ") does not match its tensor's rows");
    }
    std::unordered_set<std::string> names;
    std::vector<Tensor> tensors;
    tensors.reserve(outputs.tensors.size());
    for (const auto& [name, tensor] : outputs.tensors) {
        if (name.empty() || name == kMetadataKey)
            throw Error(path + ": tensor name " + json_quote(name) + " cannot be stored");
        if (!names.insert(name).second)
            throw Error(path + ": two tensors named " + json_quote(name));
        if (!tensor.defined())
            throw Error(path + ": tensor " + json_quote(name) + " has no data");
        // An empty tensor has no bytes to lay out, so there is nothing to make contiguous.
        tensors.push_back(tensor.numel() == 0 ? tensor : tensor.contiguous());
    }

    Json values = Json::object();
    for (const auto& [name, text] : outputs.values) {
        if (names.contains(name))
            throw Error(path + ": value " + json_quote(name) + " has the name of a tensor");
        values[name] = parse_strict_json(text, path + ": value " + json_quote(name), kMaxValueDepth);
    }

    // Data is laid out largest element first, so that with the 8-aligned data section every tensor is
    // naturally aligned in the mapping (no padding: the format forbids holes). The header lists the
    // tensors in output order, which is the order the reader returns.
    std::vector<std::size_t> data_order(tensors.size());
    std::iota(data_order.begin(), data_order.end(), 0);
    std::stable_sort(data_order.begin(), data_order.end(), [&](std::size_t a, std::size_t b) {
        return dtype_size(tensors[a].dtype()) > dtype_size(tensors[b].dtype());
    });
    std::vector<std::uint64_t> begins(tensors.size());
    std::uint64_t offset = 0;
    for (std::size_t i : data_order) {
        begins[i] = offset;
        offset += tensors[i].nbytes();
    }

    Json header = Json::object();
    if (!metadata.empty() || !values.empty() || !outputs.lengths.empty()) {
        Json meta = Json::object();
        for (const auto& [key, value] : metadata)
            meta[key] = value;
        if (!values.empty())
            meta[std::string(kValuesKey)] = values.dump();
        if (!outputs.lengths.empty()) {
            Json lengths = Json::object();
            for (const auto& [name, length] : outputs.lengths)
                lengths[name] = {{"bound", length.bound}, {"length", length.reported}};
            meta[std::string(kLengthsKey)] = lengths.dump();
        }
        header[std::string(kMetadataKey)] = std::move(meta);
    }
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        header[outputs.tensors[i].name] = {
            {"dtype", std::string(safetensors_dtype_name(tensors[i].dtype()))},
            {"shape", tensors[i].shape()},
            {"data_offsets", {begins[i], begins[i] + tensors[i].nbytes()}},
        };
    }
    std::string text;
    try {
        text = header.dump();
    } catch (const Json::type_error& e) {
        throw Error(path + ": a tensor name or metadata entry is not valid UTF-8 (" + e.what() + ")");
    }
    text.append((8 - text.size() % 8) % 8, ' ');

    std::byte length[kLengthBytes];
    for (std::size_t i = 0; i < kLengthBytes; ++i)
        length[i] = static_cast<std::byte>((static_cast<std::uint64_t>(text.size()) >> (8 * i)) & 0xff);

    AtomicFile file(path);
    file.write(length, sizeof length);
    file.write(text.data(), text.size());
    for (std::size_t i : data_order)
        file.write(tensors[i].data(), tensors[i].nbytes());
    file.commit();
}

} // namespace pkbw
