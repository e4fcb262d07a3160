// The judge's registry of memory it shares with its candidate process: every input and output a
// candidate call sees is allocated here, so any tensor view can be described to the candidate as
// (buffer id, offset), and the candidate is told to unmap a buffer before the judge frees it.
#pragma once

#include "device.h"

#include <functional>
#include <map>
#include <optional>

namespace pkbw::engine {

class SharedBuffers {
public:
    explicit SharedBuffers(Device& device)
        : device_(device) {}
    ~SharedBuffers();
    SharedBuffers(const SharedBuffers&) = delete;
    SharedBuffers& operator=(const SharedBuffers&) = delete;

    Device& device() { return device_; }
    void* allocate(std::size_t bytes);
    // Calls the release listener (the candidate unmaps) before freeing.
    void release(void* data);

    struct Location {
        int id = 0;
        std::size_t offset = 0;
    };
    // The buffer that holds [data, data + bytes), if it is one of ours.
    std::optional<Location> locate(const void* data, std::size_t bytes) const;
    const SharedAllocation& allocation(int id) const { return allocations_.at(id); }

    // Each worker process that maps these buffers listens (it unmaps a buffer before it is freed).
    // Returns the listener's key for remove_release_listener.
    int add_release_listener(std::function<void(int id)> listener);
    void remove_release_listener(int key);

private:
    Device& device_;
    int next_id_ = 1;
    std::map<int, SharedAllocation> allocations_;
    std::map<const std::byte*, int> by_address_;
    int next_listener_ = 1;
    std::map<int, std::function<void(int)>> on_release_;
};

} // namespace pkbw::engine
