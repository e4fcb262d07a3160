#include "shared_buffers.h"

#include "pkbw/core/error.h"

namespace pkbw::engine {

SharedBuffers::~SharedBuffers() {
    for (auto& [id, allocation] : allocations_) {
        device_.release_shared(allocation);
    }
}

void* SharedBuffers::allocate(std::size_t bytes) {
    SharedAllocation allocation = device_.allocate_shared(bytes);
    const int id = next_id_++;
    by_address_[static_cast<const std::byte*>(allocation.data)] = id;
    void* data = allocation.data;
    allocations_.emplace(id, std::move(allocation));
    return data;
}

void SharedBuffers::release(void* data) {
    const auto it = by_address_.find(static_cast<const std::byte*>(data));
    if (it == by_address_.end()) {
        throw Error("SharedBuffers::release: not a shared buffer");
    }
    const int id = it->second;
    by_address_.erase(it);
    for (const auto& [key, listener] : on_release_) {
        listener(id);
    }
    device_.release_shared(allocations_.at(id));
    allocations_.erase(id);
}

int SharedBuffers::add_release_listener(std::function<void(int id)> listener) {
    const int key = next_listener_++;
    on_release_.emplace(key, std::move(listener));
    return key;
}

void SharedBuffers::remove_release_listener(int key) {
    on_release_.erase(key);
}

std::optional<SharedBuffers::Location> SharedBuffers::locate(const void* data, std::size_t bytes) const {
    const auto* p = static_cast<const std::byte*>(data);
    auto it = by_address_.upper_bound(p);
    if (it == by_address_.begin()) {
        return std::nullopt;
    }
    --it;
    const SharedAllocation& allocation = allocations_.at(it->second);
    const std::size_t offset = static_cast<std::size_t>(p - it->first);
    if (offset + bytes > std::max<std::size_t>(allocation.bytes, 1)) {
        return std::nullopt;
    }
    return Location{it->second, offset};
}

} // namespace pkbw::engine
