#include "pkbw/core/tensor.h"

#include "pkbw/core/error.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <new>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pkbw {
namespace {

class OwnedStorage final : public Storage {
public:
    // At least one byte is allocated so that even an empty tensor has a writable, non-null pointer
    // (null marks read-only storage).
    explicit OwnedStorage(std::size_t bytes)
        : bytes_(allocate_zeroed(bytes == 0 ? 1 : bytes))
        , size_(bytes) {}
    const std::byte* data() const override { return bytes_.get(); }
    std::byte* mutable_data() override { return bytes_.get(); }
    std::size_t size() const override { return size_; }

private:
    struct Free {
        void operator()(std::byte* p) const { std::free(p); }
    };
    // calloc, not a zero-filled vector: a large block comes as fresh zero pages from the kernel, so an
    // input that is filled next (68's table: 57 GB at PKB's size) is written once, by the threads that
    // fill it, rather than zeroed first by this one.
    static std::unique_ptr<std::byte, Free> allocate_zeroed(std::size_t bytes) {
        void* p = std::calloc(bytes, 1);
        if (p == nullptr) {
            throw std::bad_alloc();
        }
        return std::unique_ptr<std::byte, Free>(static_cast<std::byte*>(p));
    }
    std::unique_ptr<std::byte, Free> bytes_;
    std::size_t size_;
};

// A read-only private mapping of a whole file, unmapped with the last tensor that views it.
class MappedStorage final : public Storage {
public:
    MappedStorage(void* address, std::size_t size)
        : address_(address)
        , size_(size) {}
    ~MappedStorage() override {
        if (address_ != nullptr) {
            ::munmap(address_, size_);
        }
    }
    MappedStorage(const MappedStorage&) = delete;
    MappedStorage& operator=(const MappedStorage&) = delete;

    const std::byte* data() const override { return static_cast<const std::byte*>(address_); }
    std::byte* mutable_data() override { return nullptr; }
    std::size_t size() const override { return size_; }

private:
    void* address_;
    std::size_t size_;
};

class FileDescriptor {
public:
    explicit FileDescriptor(int fd)
        : fd_(fd) {}
    ~FileDescriptor() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

} // namespace

std::shared_ptr<Storage> Storage::allocate(std::size_t bytes) {
    return std::make_shared<OwnedStorage>(bytes);
}

std::shared_ptr<Storage> Storage::map_file(const std::string& path) {
    FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        throw FormatError(path + ": cannot open: " + std::strerror(errno));
    }
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0) {
        throw FormatError(path + ": cannot stat: " + std::strerror(errno));
    }
    if (!S_ISREG(info.st_mode)) {
        throw FormatError(path + ": not a regular file");
    }
    const auto size = static_cast<std::size_t>(info.st_size);
    if (size == 0) {
        return allocate(0); // mmap refuses empty mappings
    }
    void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (address == MAP_FAILED) {
        throw FormatError(path + ": cannot map: " + std::strerror(errno));
    }
    return std::make_shared<MappedStorage>(address, size);
}

std::int64_t shape_numel(const Shape& shape) {
    for (const auto dim : shape) {
        if (dim < 0) {
            throw Error("negative dimension in shape " + shape_to_string(shape));
        }
        if (dim == 0) {
            return 0; // whatever the other dimensions are
        }
    }
    std::int64_t n = 1;
    for (const auto dim : shape) {
        if (n > INT64_MAX / dim) {
            throw Error("shape " + shape_to_string(shape) + " has too many elements");
        }
        n *= dim;
    }
    return n;
}

std::string shape_to_string(const Shape& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) {
            text += ", ";
        }
        text += std::to_string(shape[i]);
    }
    return text + "]";
}

std::vector<std::int64_t> contiguous_strides(const Shape& shape) {
    std::vector<std::int64_t> strides(shape.size());
    std::int64_t stride = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
        strides[i] = stride;
        // Saturate: only empty tensors can have dimensions whose product overflows, and their strides
        // are never used to address an element.
        if (__builtin_mul_overflow(stride, shape[i] > 0 ? shape[i] : 1, &stride)) {
            stride = INT64_MAX;
        }
    }
    return strides;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
    const auto n = shape_numel(shape);
    auto storage = Storage::allocate(static_cast<std::size_t>(n) * dtype_size(dtype));
    auto strides = contiguous_strides(shape);
    return view(std::move(storage), dtype, std::move(shape), std::move(strides), 0);
}

Tensor Tensor::from_bytes(DType dtype, Shape shape, std::span<const std::byte> bytes) {
    Tensor tensor = zeros(dtype, std::move(shape));
    if (bytes.size() != tensor.nbytes()) {
        throw Error("tensor " + tensor.describe() + " needs " + std::to_string(tensor.nbytes()) +
                    " bytes, got " + std::to_string(bytes.size()));
    }
    if (!bytes.empty()) {
        std::memcpy(tensor.mutable_data(), bytes.data(), bytes.size());
    }
    return tensor;
}

Tensor Tensor::view(std::shared_ptr<Storage> storage, DType dtype, Shape shape,
                    std::vector<std::int64_t> strides, std::size_t byte_offset) {
    if (!storage) {
        throw Error("tensor view of null storage");
    }
    if (strides.size() != shape.size()) {
        throw Error("tensor view: " + std::to_string(strides.size()) + " strides for shape " +
                    shape_to_string(shape));
    }
    const auto n = shape_numel(shape);
    const auto element = static_cast<std::int64_t>(dtype_size(dtype));
    if (byte_offset > storage->size()) {
        throw Error("tensor view starts past the end of its storage");
    }
    if (n > 0) {
        // The lowest and highest element addressed must both lie inside the storage.
        std::int64_t low = 0, high = 0;
        for (std::size_t i = 0; i < shape.size(); ++i) {
            const std::int64_t reach = (shape[i] - 1) * strides[i];
            (reach < 0 ? low : high) += reach;
        }
        const auto begin = static_cast<std::int64_t>(byte_offset) + low * element;
        const auto end = static_cast<std::int64_t>(byte_offset) + (high + 1) * element;
        if (begin < 0 || end > static_cast<std::int64_t>(storage->size())) {
            throw Error("tensor view " + shape_to_string(shape) + " reaches outside its storage of " +
                        std::to_string(storage->size()) + " bytes");
        }
    }
    Tensor tensor;
    tensor.dtype_ = dtype;
    tensor.shape_ = std::move(shape);
    tensor.strides_ = std::move(strides);
    tensor.byte_offset_ = byte_offset;
    tensor.storage_ = std::move(storage);
    return tensor;
}

std::int64_t Tensor::numel() const {
    return shape_numel(shape_);
}

bool Tensor::is_contiguous() const {
    if (numel() == 0) {
        return true; // no element to address: any strides describe the same (empty) tensor
    }
    std::int64_t expected = 1;
    for (std::size_t i = shape_.size(); i-- > 0;) {
        if (shape_[i] != 1 && strides_[i] != expected) {
            return false;
        }
        expected *= shape_[i];
    }
    return true;
}

const std::byte* Tensor::data() const {
    return storage_ ? storage_->data() + byte_offset_ : nullptr;
}

std::byte* Tensor::mutable_data() {
    if (!storage_ || storage_->mutable_data() == nullptr) {
        throw Error("tensor " + describe() + " is read-only");
    }
    return storage_->mutable_data() + byte_offset_;
}

const std::byte* Tensor::element_ptr(std::int64_t linear) const {
    std::int64_t offset = 0;
    if (is_contiguous()) {
        offset = linear;
    } else {
        for (std::size_t i = shape_.size(); i-- > 0;) {
            const std::int64_t dim = shape_[i];
            offset += (linear % dim) * strides_[i];
            linear /= dim;
        }
    }
    return data() + offset * static_cast<std::int64_t>(dtype_size(dtype_));
}

double Tensor::get_f64(std::int64_t linear) const {
    return element_to_f64(dtype_, element_ptr(linear));
}
float Tensor::get_f32(std::int64_t linear) const {
    return element_to_f32(dtype_, element_ptr(linear));
}

Tensor Tensor::contiguous() const {
    if (is_contiguous()) {
        return *this;
    }
    return clone();
}

Tensor Tensor::clone() const {
    Tensor copy = zeros(dtype_, shape_);
    const auto n = numel();
    const auto element = dtype_size(dtype_);
    if (is_contiguous()) {
        if (n > 0) {
            std::memcpy(copy.mutable_data(), data(), nbytes());
        }
        return copy;
    }
    std::byte* out = copy.mutable_data();
    for (std::int64_t i = 0; i < n; ++i) {
        std::memcpy(out + i * element, element_ptr(i), element);
    }
    return copy;
}

std::vector<float> Tensor::to_f32() const {
    const auto n = numel();
    std::vector<float> values(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
        values[i] = get_f32(i);
    }
    return values;
}

std::vector<double> Tensor::to_f64() const {
    const auto n = numel();
    std::vector<double> values(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
        values[i] = get_f64(i);
    }
    return values;
}

bool Tensor::bitwise_equal(const Tensor& other) const {
    if (dtype_ != other.dtype_ || shape_ != other.shape_) {
        return false;
    }
    const Tensor a = contiguous();
    const Tensor b = other.contiguous();
    return nbytes() == 0 || std::memcmp(a.data(), b.data(), nbytes()) == 0;
}

std::string Tensor::describe() const {
    return std::string(dtype_name(dtype_)) + shape_to_string(shape_);
}

} // namespace pkbw
