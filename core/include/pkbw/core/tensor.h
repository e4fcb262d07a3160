// A tensor value: dtype, shape, strides (in elements), and bytes that are either owned or mapped
// from a file. Copies share the bytes; `contiguous()` and `clone()` make new ones.
#pragma once

#include "pkbw/core/dtype.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace pkbw {

// Bytes a tensor views. Owned (a heap buffer) or mapped (a read-only file mapping kept alive for as
// long as any tensor refers to it).
class Storage {
public:
    virtual ~Storage() = default;
    virtual const std::byte* data() const = 0;
    virtual std::byte* mutable_data() = 0; // null for read-only (mapped) storage
    virtual std::size_t size() const = 0;

    static std::shared_ptr<Storage> allocate(std::size_t bytes); // zero-filled
    // Maps `path` read-only. Throws pkbw::FormatError naming the path if it cannot.
    static std::shared_ptr<Storage> map_file(const std::string& path);
};

using Shape = std::vector<std::int64_t>;

class Tensor {
public:
    Tensor() = default;
    // A contiguous, zero-filled tensor.
    static Tensor zeros(DType dtype, Shape shape);
    // A contiguous tensor over `bytes` (copied).
    static Tensor from_bytes(DType dtype, Shape shape, std::span<const std::byte> bytes);
    // A view of `storage` starting `byte_offset` bytes in, with the given strides (elements).
    // Throws pkbw::Error if the view reaches outside the storage.
    static Tensor view(std::shared_ptr<Storage> storage, DType dtype, Shape shape,
                       std::vector<std::int64_t> strides, std::size_t byte_offset = 0);

    DType dtype() const { return dtype_; }
    const Shape& shape() const { return shape_; }
    const std::vector<std::int64_t>& strides() const { return strides_; }
    std::size_t byte_offset() const { return byte_offset_; }
    int ndim() const { return static_cast<int>(shape_.size()); }
    std::int64_t numel() const;
    std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
    bool is_contiguous() const;
    bool defined() const { return storage_ != nullptr; }

    // Pointer to element 0. For contiguous tensors the whole tensor is [data(), data() + nbytes()).
    const std::byte* data() const;
    std::byte* mutable_data(); // throws if the storage is read-only
    const std::shared_ptr<Storage>& storage() const { return storage_; }

    template <class T>
    const T* data_as() const {
        return reinterpret_cast<const T*>(data());
    }
    template <class T>
    T* mutable_data_as() {
        return reinterpret_cast<T*>(mutable_data());
    }

    // Byte address of the element at logical (row-major) index `linear`, honouring strides.
    const std::byte* element_ptr(std::int64_t linear) const;
    double get_f64(std::int64_t linear) const;
    float get_f32(std::int64_t linear) const;

    Tensor contiguous() const; // itself when already contiguous
    Tensor clone() const;      // always a new contiguous copy
    // Every element converted to f32 (PyTorch's `.float()`), in logical order.
    std::vector<float> to_f32() const;
    std::vector<double> to_f64() const;

    // Same dtype, shape and bytes of every element (NaN payloads compared bitwise).
    bool bitwise_equal(const Tensor& other) const;

    // "bf16[4, 1024]"
    std::string describe() const;

private:
    DType dtype_ = DType::F32;
    Shape shape_;
    std::vector<std::int64_t> strides_;
    std::size_t byte_offset_ = 0;
    std::shared_ptr<Storage> storage_;
};

// Row-major strides for `shape`, in elements.
std::vector<std::int64_t> contiguous_strides(const Shape& shape);
// Product of the dimensions; throws pkbw::Error on a negative dimension or on overflow.
std::int64_t shape_numel(const Shape& shape);
std::string shape_to_string(const Shape& shape);

} // namespace pkbw
