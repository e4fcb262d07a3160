// Where pkbw's timed calls read and write (docs/perf.md, "pkbw's protocol"): the slot layout of a
// block's input sets and output sets, the judge's shared memory that holds them, and the placement a
// launch gives them (a spacer of device memory before them and an offset in each), so that what a
// process fixes for its life (which physical pages, DRAM channels and L2 slices) varies by launch.
#pragma once

#include "device.h"
#include "pkbw/core/random.h"
#include "shared_buffers.h"
#include "timing_inputs.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pkbw::engine {

// K slots of one kind (inputs, or one side's outputs), set after set, each tensor 256-byte aligned.
struct SlotLayout {
    std::vector<TensorSpec> specs;
    std::vector<std::size_t> offsets;
    std::size_t set_bytes = 0;

    explicit SlotLayout(std::vector<TensorSpec> specs_)
        : specs(std::move(specs_)) {
        for (const auto& spec : specs) {
            offsets.push_back(set_bytes);
            set_bytes += aligned_bytes(bytes(spec));
        }
    }
    static std::size_t bytes(const TensorSpec& spec) {
        return static_cast<std::size_t>(shape_numel(spec.shape)) * dtype_size(spec.dtype);
    }
    std::vector<TensorView> views(void* base, int slot) const {
        std::vector<TensorView> out;
        for (std::size_t t = 0; t < specs.size(); ++t) {
            TensorView view{};
            view.name = specs[t].name.c_str();
            view.dtype = specs[t].dtype;
            view.ndim = static_cast<std::int32_t>(specs[t].shape.size());
            const auto strides = contiguous_strides(specs[t].shape);
            for (int d = 0; d < view.ndim && d < kMaxDims; ++d) {
                view.shape[d] = specs[t].shape[static_cast<std::size_t>(d)];
                view.strides[d] = strides[static_cast<std::size_t>(d)];
            }
            view.data =
                static_cast<std::byte*>(base) + set_bytes * static_cast<std::size_t>(slot) + offsets[t];
            out.push_back(view);
        }
        return out;
    }
};

// Memory in the judge's SharedBuffers, released when the timing ends. `pad` bytes (a multiple of 256)
// lie before the slots: each launch places its buffers differently (docs/perf.md "Replication").
class SharedSlots {
public:
    SharedSlots(SharedBuffers& shared, std::size_t bytes, std::size_t pad = 0)
        : shared_(shared)
        , base_(shared.allocate(std::max<std::size_t>(bytes + pad, 1)))
        , data_(static_cast<std::byte*>(base_) + pad) {}
    ~SharedSlots() { shared_.release(base_); }
    SharedSlots(const SharedSlots&) = delete;
    SharedSlots& operator=(const SharedSlots&) = delete;
    void* data() const { return data_; }

private:
    SharedBuffers& shared_;
    void* base_;
    void* data_;
};

// Device memory of the judge's own, shared with no worker, released with this object.
class DeviceMemory {
public:
    DeviceMemory(Device& device, std::size_t bytes)
        : device_(device)
        , data_(bytes > 0 ? device.allocate(bytes) : nullptr) {}
    ~DeviceMemory() {
        if (data_ != nullptr) {
            device_.release(data_);
        }
    }
    DeviceMemory(const DeviceMemory&) = delete;
    DeviceMemory& operator=(const DeviceMemory&) = delete;
    void* data() const { return data_; }

private:
    Device& device_;
    void* data_;
};

// Device memory held for the timing's life and never touched: a launch's random amount of it, taken
// before the slots, moves the slots to other physical pages (the allocator hands pages out in order),
// whose DRAM channels and L2 slices differ; an offset inside one allocation alone would not.
using Spacer = DeviceMemory;

// A launch's spacer: 0 to 1 GiB in 2 MiB pages on a GPU (none on the host backend, whose ranks share
// the machine's memory, nor without a launch seed).
inline std::size_t spacer_bytes(const Device& device, std::uint64_t seed, int rank) {
    if (seed == 0 || device.on_host()) {
        return 0;
    }
    const CounterRng rng(seed, 0x5ACE + static_cast<std::uint64_t>(rank));
    return static_cast<std::size_t>(rng.integer(0, 0, 513)) * (2u << 20);
}

// A launch's offset for one buffer: a multiple of 256 bytes below 2 MiB, from the launch's seed.
inline std::size_t launch_pad(std::uint64_t seed, int rank, int buffer) {
    if (seed == 0) {
        return 0;
    }
    const CounterRng rng(seed, 0x9AD + static_cast<std::uint64_t>(rank));
    return static_cast<std::size_t>(rng.integer(static_cast<std::uint64_t>(buffer), 0, 8192)) * 256;
}

} // namespace pkbw::engine
