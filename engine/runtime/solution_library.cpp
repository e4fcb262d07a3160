#include "solution_library.h"

#include "pkbw/core/error.h"
#include "pkbw/core/problem.h"
#include "rendezvous.h"

#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <sys/resource.h>
#include <utility>

namespace pkbw::engine {

std::string out_of_memory_message() {
    std::string message = "out of memory (std::bad_alloc)";
    rlimit limit{};
    if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
        char text[128];
        std::snprintf(text, sizeof text, "; this rank's address space is limited to %.1f GiB (RLIMIT_AS, %s)",
                      static_cast<double>(limit.rlim_cur) / (1ull << 30), "pkbw --memory-limit");
        message += text;
    }
    return message;
}

SolutionLibrary::SolutionLibrary(const std::string& path, std::string side)
    : path_(path)
    , side_(std::move(side)) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = ::dlerror();
        throw Error(side_ + " library " + path + " cannot be loaded: " + (why ? why : "unknown error"));
    }
    void* symbol = ::dlsym(handle, "pkbw_solution");
    if (symbol == nullptr) {
        throw Error(side_ + " library " + path + " does not define extern \"C\" pkbw_solution");
    }
    entry_ = reinterpret_cast<int (*)(const Context&)>(symbol);
}

namespace {
SolutionSession& session_of(const Context* ctx) {
    return *static_cast<SolutionSession*>(ctx->engine);
}
} // namespace

// The C entry points behind Context's members. Errors propagate as C++ exceptions through the
// solution's frames (it is C++ built by the same toolchain) to the runner, which reports them.
struct SessionServices {
    static SymmetricMemory symmetric(const Context* ctx, const char* name, std::size_t bytes) {
        SolutionSession& session = session_of(ctx);
        const std::string key = name ? name : "";
        if (auto it = session.symmetric_.find(key); it != session.symmetric_.end()) {
            if (it->second.allocation.bytes < bytes) {
                throw Error(session.side_ + ": symmetric buffer '" + key + "' was allocated with " +
                            std::to_string(it->second.allocation.bytes) + " bytes; asked again for " +
                            std::to_string(bytes));
            }
            return it->second.view;
        }
        // Every rank must ask for the same buffer at the same point: check before allocating.
        const std::string request = key + "#" + std::to_string(bytes);
        const auto requests =
            session.rendezvous_.all_gather(std::as_bytes(std::span(request.data(), request.size())));
        for (std::size_t r = 0; r < requests.size(); ++r) {
            const std::string other(reinterpret_cast<const char*>(requests[r].data()), requests[r].size());
            if (other != request) {
                throw Error(session.side_ + ": ranks disagree on a symmetric allocation: rank " +
                            std::to_string(ctx->rank) + " asked for '" + request + "', rank " +
                            std::to_string(r) + " for '" + other + "'");
            }
        }
        SolutionSession::Symmetric entry;
        entry.allocation = session.device_.allocate_symmetric(bytes, session.rendezvous_);
        auto& stored = session.symmetric_[key] = std::move(entry);
        SymmetricAllocation& a = stored.allocation;
        stored.view.local = a.peers[ctx->rank];
        stored.view.peers = a.peers.data();
        stored.view.peers_device =
            a.peers_device ? static_cast<void* const*>(a.peers_device) : a.peers.data();
        stored.view.signal_pads = a.signal_pads.data();
        stored.view.signal_pads_device = a.signal_pads_device
                                             ? static_cast<std::uint32_t* const*>(a.signal_pads_device)
                                             : a.signal_pads.data();
        stored.view.bytes = bytes;
        return stored.view;
    }

    static void* scratch(const Context* ctx, const char* name, std::size_t bytes) {
        SolutionSession& session = session_of(ctx);
        auto& slot = session.scratch_[name ? name : ""];
        if (slot.first == nullptr || slot.second < bytes) {
            if (slot.first != nullptr) {
                session.device_.synchronize();
                session.device_.release(slot.first);
            }
            slot = {session.device_.allocate(bytes), bytes};
        }
        return slot.first;
    }

    static void barrier(const Context* ctx) {
        SolutionSession& session = session_of(ctx);
        session.device_.synchronize();
        session.rendezvous_.barrier();
    }

    static void all_gather_host(const Context* ctx, const void* send, std::size_t bytes, void* recv) {
        SolutionSession& session = session_of(ctx);
        const auto all =
            session.rendezvous_.all_gather_concat(std::span(static_cast<const std::byte*>(send), bytes));
        std::memcpy(recv, all.data(), all.size());
    }

    static double param(const Context* ctx, const char* name, double fallback) {
        const SolutionSession& session = session_of(ctx);
        const auto it = session.params_.find(name ? name : "");
        return it == session.params_.end() ? fallback : it->second;
    }

    static SubComm sub_comm(const Context* ctx, const SubCommLayout* layout) {
        SolutionSession& session = session_of(ctx);
        const std::string key = describe_layout(*layout);
        if (auto it = session.sub_comms_.find(key); it != session.sub_comms_.end())
            return it->second.view;
        // Every rank's layout, so that a disagreement is an error naming both ranks, not a hang in NCCL.
        const auto gathered = session.rendezvous_.all_gather(std::as_bytes(std::span(layout, 1)));
        std::vector<SubCommLayout> layouts(gathered.size());
        for (std::size_t r = 0; r < gathered.size(); ++r) {
            if (gathered[r].size() != sizeof(SubCommLayout))
                throw Error(session.side_ + ": ctx.sub_comm: rank " + std::to_string(r) +
                            " sent a malformed layout");
            std::memcpy(&layouts[r], gathered[r].data(), sizeof(SubCommLayout));
        }
        SolutionSession::CachedSubComm entry;
        try {
            entry.group = sub_comm_group(layouts, ctx->rank);
        } catch (const Error& error) {
            throw Error(session.side_ + ": " + error.what());
        }
        auto& stored = session.sub_comms_[key] = std::move(entry);
        const SubCommGroup& g = stored.group;
        stored.view.rank = g.rank;
        stored.view.size = static_cast<int>(g.ranks.size());
        stored.view.group = g.group;
        stored.view.groups = g.groups;
        stored.view.ranks = g.ranks.data();
        // The key is the computed index, so NCCL's order is exactly the group order above.
        stored.view.nccl_handle = session.device_.split_nccl(g.group, g.rank);
        return stored.view;
    }

    static void all_gather_group_host(const Context* ctx, const SubComm* group, const void* send,
                                      std::size_t bytes, void* recv) {
        SolutionSession& session = session_of(ctx);
        const auto all =
            session.rendezvous_.all_gather(std::span(static_cast<const std::byte*>(send), bytes));
        auto* out = static_cast<std::byte*>(recv);
        for (int i = 0; i < group->size; ++i) {
            const int r = group->ranks[i];
            if (r < 0 || r >= static_cast<int>(all.size()))
                throw Error(session.side_ + ": ctx.all_gather_host(group): the group names rank " +
                            std::to_string(r) + " of a world of " + std::to_string(all.size()));
            if (all[r].size() != bytes)
                throw Error(session.side_ + ": ctx.all_gather_host(group): rank " + std::to_string(r) +
                            " sent " + std::to_string(all[r].size()) + " bytes, rank " +
                            std::to_string(ctx->rank) + " " + std::to_string(bytes));
            std::memcpy(out + i * bytes, all[r].data(), bytes);
        }
    }

    static int param_list(const Context* ctx, const char* name, double* values, int capacity) {
        const SolutionSession& session = session_of(ctx);
        const std::string base = name ? name : "";
        const auto length = session.params_.find(list_param_length_key(base));
        if (length == session.params_.end())
            return -1;
        const int count = static_cast<int>(length->second);
        for (int i = 0; i < count && i < capacity; ++i) {
            const auto it = session.params_.find(list_param_key(base, i));
            if (it == session.params_.end())
                throw Error(session.side_ + ": list parameter '" + base + "' has length " +
                            std::to_string(count) + " but no element " + std::to_string(i));
            values[i] = it->second;
        }
        return count;
    }

    static int fail(const Context* ctx, const char* message) {
        session_of(ctx).failure_ = message && *message ? message : "solution reported failure";
        return 1;
    }

    // Written in stream order on cuda (the slot is device memory a kernel may also write); the value
    // travels from the stack, which copy_async stages before it returns.
    static int set_output_length(const Context* ctx, int output, std::int64_t length) {
        SolutionSession& session = session_of(ctx);
        const std::string where = session.side_ + ": ctx.set_output_length(" + std::to_string(output) + ", " +
                                  std::to_string(length) + "): ";
        if (ctx->output_lengths == nullptr)
            return fail(ctx, (where + "no output of this problem has a variable length").c_str());
        if (output < 0 || output >= ctx->num_outputs)
            return fail(ctx, (where + "there are " + std::to_string(ctx->num_outputs) + " outputs").c_str());
        const std::int64_t bound = ctx->outputs[output].ndim > 0 ? ctx->outputs[output].shape[0] : 1;
        if (length < 0 || length > bound)
            return fail(ctx,
                        (where + "outside 0.." + std::to_string(bound) + " (the output's bound)").c_str());
        session.device_.copy_async(ctx->output_lengths + output, &length, sizeof length);
        return 0;
    }
};

SolutionSession::SolutionSession(std::string side, Device& device, Rendezvous& rendezvous,
                                 std::map<std::string, double> params)
    : side_(std::move(side))
    , device_(device)
    , rendezvous_(rendezvous)
    , params_(std::move(params)) {}

SolutionSession::~SolutionSession() {
    for (auto& [name, slot] : scratch_) {
        device_.release(slot.first);
    }
}

const Services& SolutionSession::services() {
    static const Services table{&SessionServices::symmetric,  &SessionServices::scratch,
                                &SessionServices::barrier,    &SessionServices::all_gather_host,
                                &SessionServices::param,      &SessionServices::fail,
                                &SessionServices::sub_comm,   &SessionServices::all_gather_group_host,
                                &SessionServices::param_list, &SessionServices::set_output_length};
    return table;
}

Context SolutionSession::make_context(int local_rank, const std::vector<TensorView>& inputs,
                                      const std::vector<TensorView>& outputs, std::int64_t* output_lengths) {
    Context context{};
    context.abi_version = kAbiVersion;
    context.rank = rendezvous_.rank();
    context.world_size = rendezvous_.world_size();
    context.local_rank = local_rank;
    context.device = device_.ordinal();
    context.stream_handle = device_.stream_handle();
    context.nccl_handle = device_.nccl_handle();
    context.num_inputs = static_cast<int>(inputs.size());
    context.inputs = inputs.data();
    context.num_outputs = static_cast<int>(outputs.size());
    context.outputs = outputs.data();
    context.services = &services();
    context.engine = this;
    context.output_lengths = output_lengths;
    return context;
}

std::string SolutionSession::take_failure() {
    return std::exchange(failure_, {});
}

} // namespace pkbw::engine
