// A compiled solution (.so) loaded into a rank process, and the per-solution state behind the
// solution ABI's services (symmetric memory, scratch, parameters, failure message).
#pragma once

#include "device.h"
#include "pkbw/solution.h"
#include "sub_comm.h"

#include <map>
#include <string>
#include <vector>

namespace pkbw::engine {

class Rendezvous;

// "out of memory (std::bad_alloc)", with the address-space cap when the process runs under one
// (pkbw --memory-limit), so a candidate that asked for too much is not mistaken for a broken machine.
std::string out_of_memory_message();

class SolutionLibrary {
public:
    // dlopen()s `path` privately (RTLD_LOCAL) so that a reference and a candidate defining the same
    // symbols coexist. Throws pkbw::Error with the loader's message.
    SolutionLibrary(const std::string& path, std::string side);
    SolutionLibrary(const SolutionLibrary&) = delete;
    SolutionLibrary& operator=(const SolutionLibrary&) = delete;
    // The library stays loaded until the process exits: unloading CUDA code while its module may
    // still be referenced by the runtime is a common source of crashes at exit.
    ~SolutionLibrary() = default;

    const std::string& side() const { return side_; }
    const std::string& path() const { return path_; }
    int call(const Context& context) const { return entry_(context); }

private:
    std::string path_;
    std::string side_;
    int (*entry_)(const Context&) = nullptr;
};

// What the services of one solution need and cache. Context::engine points to it.
class SolutionSession {
public:
    SolutionSession(std::string side, Device& device, Rendezvous& rendezvous,
                    std::map<std::string, double> params);
    ~SolutionSession();
    SolutionSession(const SolutionSession&) = delete;
    SolutionSession& operator=(const SolutionSession&) = delete;

    // Builds the context for one call; the views must outlive the call.
    // output_lengths: the view set's length slots (variable-length outputs), null when none is variable.
    Context make_context(int local_rank, const std::vector<TensorView>& inputs,
                         const std::vector<TensorView>& outputs, std::int64_t* output_lengths = nullptr);
    void set_params(std::map<std::string, double> params) { params_ = std::move(params); }
    // The message the solution passed to ctx.fail() in its last call ("" if none), then cleared.
    std::string take_failure();

    static const Services& services();

private:
    friend struct SessionServices;
    struct Symmetric {
        SymmetricAllocation allocation;
        SymmetricMemory view{};
    };
    struct CachedSubComm {
        SubCommGroup group; // owns the ranks view.ranks points to
        SubComm view{};
    };

    std::string side_;
    Device& device_;
    Rendezvous& rendezvous_;
    std::map<std::string, double> params_;
    std::map<std::string, Symmetric> symmetric_;
    std::map<std::string, std::pair<void*, std::size_t>> scratch_;
    std::map<std::string, CachedSubComm> sub_comms_; // by describe_layout()
    std::string failure_;
};

} // namespace pkbw::engine
