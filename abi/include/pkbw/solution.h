// pkbw solution ABI: the one header a candidate (and every problem's reference) includes.
//
// A solution is one source file that defines
//
//     extern "C" int pkbw_solution(const pkbw::Context& ctx);
//
// The engine calls it once per rank per call, with the rank's pre-allocated inputs and outputs
// (device memory on the cuda backend, host memory on the host backend). Return 0 on success, or
// `ctx.fail("why")`. Work may be left queued on ctx.stream(): the engine synchronizes after the call.
// docs/solution-abi.md walks through a complete example.
#pragma once

#include "pkbw/dtype_enum.h"

#include <cstddef>
#include <cstdint>

#if defined(PKBW_BACKEND_CUDA)
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace pkbw {

// 2: Services gained sub_comm, all_gather_group_host and param_list (appended: a solution built
// against version 1 runs unchanged).
// 3: variable-length outputs: Context gained output_lengths and Services set_output_length (appended:
// a solution built against version 1 or 2 runs unchanged).
inline constexpr int kAbiVersion = 3;
inline constexpr int kMaxDims = 8;
inline constexpr int kMaxRanks = 64;
// Every symmetric allocation comes with one signal pad per rank of this many 32-bit words, zeroed
// once when allocated. A device-side barrier must leave its words as it found them (reset after
// use), since the pad is reused by every later call.
inline constexpr int kSignalPadWords = 4096;

inline std::size_t element_size(DType dtype) {
    switch (dtype) {
    case DType::F64:
    case DType::I64:
    case DType::C64:
        return 8;
    case DType::F32:
    case DType::I32:
        return 4;
    case DType::F16:
    case DType::BF16:
    case DType::I16:
        return 2;
    default:
        return 1;
    }
}

// One input or output of this rank. Strides are in elements; the engine's tensors are contiguous.
struct TensorView {
    const char* name;
    DType dtype;
    std::int32_t ndim;
    std::int64_t shape[kMaxDims];
    std::int64_t strides[kMaxDims];
    void* data;

    std::int64_t numel() const {
        std::int64_t n = 1;
        for (int i = 0; i < ndim; ++i)
            n *= shape[i];
        return n;
    }
    std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(dtype); }
    template <class T>
    T* as() const {
        return static_cast<T*>(data);
    }
};

// A buffer allocated collectively on every rank, each rank's mapped into every other rank's
// address space (CUDA IPC on the cuda backend, POSIX shared memory on the host backend).
struct SymmetricMemory {
    void* local;                       // this rank's buffer (== peers[rank])
    void* const* peers;                // host array: peers[r] is rank r's buffer, usable in this process
    void* const* peers_device;         // the same pointers in device memory, for kernels (host: == peers)
    std::uint32_t* const* signal_pads; // host array: rank r's signal pad
    std::uint32_t* const* signal_pads_device; // the same in device memory (host: == signal_pads)
    std::size_t bytes;
};

// How ctx.sub_comm groups the world's ranks: PKB's process groups (torch.distributed.new_group).
enum class SubCommKind : std::int32_t {
    Blocks = 0,  // groups of `value` consecutive ranks: {0..v-1}, {v..2v-1}, ... (48's TP, 22's EP group)
    Strided = 1, // `value` groups of ranks `value` apart: {i, i+v, i+2v, ...} (48's FSDP, 22's EP-FSDP)
    Split = 2,   // ranks passing the same color `value` (>= 0) form a group, ordered by (key, rank)
};

struct SubCommLayout {
    SubCommKind kind;
    std::int32_t value; // Blocks: group size; Strided: stride (the number of groups); Split: color
    std::int32_t key;   // Split: this rank's sort key within its group; 0 otherwise
};

// This rank's group of a layout. Cached per layout by the engine: the same pointers every call.
struct SubComm {
    int rank;   // this rank's index within its group
    int size;   // ranks in the group
    int group;  // which group this rank is in (Blocks: rank / size; Strided: rank % stride; Split: color)
    int groups; // groups in the layout
    const int* ranks;  // the group's world ranks in group order (host array of `size`)
    void* nccl_handle; // ncclComm_t over the group (cuda); null on the host backend

    int world_rank(int group_rank) const { return ranks[group_rank]; }
#if defined(PKBW_BACKEND_CUDA)
    ncclComm_t nccl() const {
        return static_cast<ncclComm_t>(nccl_handle);
    }
#endif
};

struct Context;

// Services the engine provides; call them through Context's members. New entries are appended.
struct Services {
    SymmetricMemory (*symmetric)(const Context* ctx, const char* name, std::size_t bytes);
    void* (*scratch)(const Context* ctx, const char* name, std::size_t bytes);
    void (*barrier)(const Context* ctx);
    void (*all_gather_host)(const Context* ctx, const void* send, std::size_t bytes, void* recv);
    double (*param)(const Context* ctx, const char* name, double fallback);
    int (*fail)(const Context* ctx, const char* message);
    // Version 2:
    SubComm (*sub_comm)(const Context* ctx, const SubCommLayout* layout);
    void (*all_gather_group_host)(const Context* ctx, const SubComm* group, const void* send,
                                  std::size_t bytes, void* recv);
    int (*param_list)(const Context* ctx, const char* name, double* values, int capacity);
    // Version 3:
    int (*set_output_length)(const Context* ctx, int output, std::int64_t length);
};

struct Context {
    int abi_version;
    int rank;
    int world_size;
    int local_rank;
    int device;          // CUDA device ordinal; -1 on the host backend
    void* stream_handle; // cudaStream_t (null on the host backend)
    void* nccl_handle;   // ncclComm_t over all ranks (null on the host backend)
    int num_inputs;
    const TensorView* inputs;
    int num_outputs;
    const TensorView* outputs;
    const Services* services;
    void* engine; // the engine's per-rank state; opaque to solutions
    // Version 3. Variable-length outputs (docs/solution-abi.md): an output whose problem declares its
    // leading dimension variable is allocated at its bound (shape[0]); the solution reports how many
    // leading rows it filled in output_lengths[i], and only that prefix is compared. The array has
    // num_outputs slots in the backend's memory (device memory on cuda: a kernel may write its slot;
    // host memory on the host backend), or is null when no output of the problem is variable. Before
    // each call the engine sets a variable output's slot to -1 (not reported) and a fixed one's to
    // shape[0]; a fixed output's slot is never read.
    std::int64_t* output_lengths;

    const TensorView& input(int i) const { return inputs[i]; }
    const TensorView& output(int i) const { return outputs[i]; }
    bool on_host() const { return device < 0; }

    // Collective: every rank must call it with the same name and size, in the same order. The first
    // call allocates (zero-filled) and exchanges mappings; later calls with that name return the
    // cached buffer, so calling it on every invocation is cheap.
    SymmetricMemory symmetric(const char* name, std::size_t bytes) const {
        return services->symmetric(this, name, bytes);
    }
    // Per-rank scratch memory (device on cuda, host on host), cached by name; not zeroed.
    void* scratch(const char* name, std::size_t bytes) const { return services->scratch(this, name, bytes); }
    // Host-side barrier of all ranks; on the cuda backend it first waits for ctx.stream().
    void barrier() const { services->barrier(this); }
    // Host-side all-gather of `bytes` from every rank into recv (world_size * bytes, rank order).
    void all_gather_host(const void* send, std::size_t bytes, void* recv) const {
        services->all_gather_host(this, send, bytes, recv);
    }
    // A problem's scalar parameter (root rank, eps, ...), or `fallback` when the problem has none.
    double param(const char* name, double fallback = 0.0) const {
        return services->param(this, name, fallback);
    }
    // Records why the call failed and returns the non-zero code to return from pkbw_solution.
    int fail(const char* message) const { return services->fail(this, message); }

    // A list-valued parameter (split sizes, counts, shapes): copies up to `capacity` values into
    // `values` and returns the list's length (which may exceed capacity), or -1 when the problem has none.
    int param_list(const char* name, double* values, int capacity) const {
        return services->param_list(this, name, values, capacity);
    }

    // Variable-length outputs: reports that output `output` holds `length` valid leading rows (0 <= length
    // <= its shape[0]). From host code on either backend (on cuda it is ordered on ctx.stream()); a kernel
    // may instead write output_length_slot(output). Returns non-zero (with ctx.fail's message recorded)
    // when the output is not variable-length or the length is out of range.
    int set_output_length(int output, std::int64_t length) const {
        return services->set_output_length(this, output, length);
    }
    // The slot a kernel writes the length into (device memory on cuda), or null when the output is fixed.
    std::int64_t* output_length_slot(int output) const {
        return output_lengths == nullptr ? nullptr : output_lengths + output;
    }

    // Collective over all ranks: this rank's group of `layout`, with an NCCL communicator over the group
    // on the cuda backend (ncclCommSplit of ctx.nccl()). Every rank calls it at the same point with the
    // same kind and value (Split: each its own color and key). The first call per layout creates the
    // groups; later calls return the cached SubComm, so calling it on every invocation is cheap. A layout
    // that does not tile the world (Blocks or Strided value not dividing world_size) is an error.
    SubComm sub_comm(const SubCommLayout& layout) const { return services->sub_comm(this, &layout); }
    SubComm sub_comm_blocks(int size) const { return sub_comm(SubCommLayout{SubCommKind::Blocks, size, 0}); }
    SubComm sub_comm_strided(int stride) const {
        return sub_comm(SubCommLayout{SubCommKind::Strided, stride, 0});
    }
    SubComm sub_comm_split(int color, int key) const {
        return sub_comm(SubCommLayout{SubCommKind::Split, color, key});
    }
    // Host-side all-gather within `group` (from sub_comm): `bytes` from each member into recv
    // (group.size * bytes, group order). Collective over all ranks: every rank calls it at the same
    // point, each with its own group of the same layout.
    void all_gather_host(const SubComm& group, const void* send, std::size_t bytes, void* recv) const {
        services->all_gather_group_host(this, &group, send, bytes, recv);
    }

#if defined(PKBW_BACKEND_CUDA)
    cudaStream_t stream() const {
        return static_cast<cudaStream_t>(stream_handle);
    }
    ncclComm_t nccl() const {
        return static_cast<ncclComm_t>(nccl_handle);
    }
#endif
};

#if defined(PKBW_BACKEND_CUDA)
// The NCCL element type of a dtype (ncclUint8 for bool and the fp8 types when NCCL has none).
inline ncclDataType_t nccl_dtype(DType dtype) {
    switch (dtype) {
    case DType::F64:
        return ncclFloat64;
    case DType::F32:
        return ncclFloat32;
    case DType::F16:
        return ncclFloat16;
    case DType::BF16:
        return ncclBfloat16;
    case DType::I8:
        return ncclInt8;
    case DType::I32:
        return ncclInt32;
    case DType::I64:
        return ncclInt64;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    case DType::F8E4M3:
        return ncclFloat8e4m3;
    case DType::F8E5M2:
        return ncclFloat8e5m2;
#endif
    default:
        return ncclUint8;
    }
}
#endif

} // namespace pkbw

extern "C" {
// The entry point every solution defines.
int pkbw_solution(const pkbw::Context& ctx);
}
