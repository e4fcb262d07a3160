// Which kernel launches touch another GPU's memory (docs/tracing.md, "Kernels that touch peer
// memory"). An LLM candidate usually replaces NCCL with its own kernel that reads or writes a peer's
// buffer through pkbw's symmetric memory; no name marks it. The rank runtime tells the tracer where
// the peers' buffers (and the device tables of their addresses) lie in this process; at a traced
// launch, a kernel given a pointer into one of them touches peer memory, and its kernel event says so
// (TraceEvent::peer_memory), so the workbench counts it as communication. No CUPTI calls here: the
// parts are unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::tracer {

// For each parameter of a kernel, whether it is a pointer, from its mangled name's signature
// ("_ZN12_GLOBAL__N_14pushEPKfPKPfi" -> {true, true, false}). nullopt where the name carries no
// signature (an extern "C" kernel, a name that does not demangle): its launches cannot be read.
std::optional<std::vector<bool>> pointer_parameters(const std::string& mangled);

// Address ranges of peer memory in this process. Thread-safe.
class PeerRanges {
public:
    void add(std::uint64_t begin, std::uint64_t bytes);
    bool contains(std::uint64_t address) const;
    bool empty() const;

private:
    mutable std::mutex mutex_;
    std::map<std::uint64_t, std::uint64_t> ranges_; // begin -> end (exclusive)
};

// Whether a launch passes a pointer into `peers`: `args[i]` points to parameter i's value (the
// layout of cudaLaunchKernel's and cuLaunchKernel's parameter arrays), `pointers` says which
// parameters are pointers. Only those are read, 8 bytes each.
bool launch_touches_peer_memory(const std::vector<bool>& pointers, void* const* args,
                                const PeerRanges& peers);

} // namespace pkbw::tracer
