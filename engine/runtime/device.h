// Where a rank's tensors live and run: host memory (the host backend) or one CUDA device. The trial
// loop is written once against this interface.
#pragma once

#include "pkbw/core/problem.h"
#include "pkbw/solution.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pkbw::engine {

class Rendezvous;

// A failure of the device or its communicator; `kind` is the protocol's error kind
// (core/status.h: kKindCudaError, kKindNcclError, kKindEnvironment).
class DeviceError : public std::runtime_error {
public:
    DeviceError(std::string_view kind, const std::string& message)
        : std::runtime_error(message)
        , kind_(kind) {}
    const std::string& kind() const { return kind_; }

private:
    std::string kind_;
};

// One collective allocation: this rank's buffer and every peer's, plus signal pads.
struct SymmetricAllocation {
    std::vector<void*> peers;                // peers[r]: rank r's buffer in this process
    std::vector<std::uint32_t*> signal_pads; // signal_pads[r]: rank r's pad
    void* peers_device = nullptr;            // device copy of `peers` (== peers.data() on host)
    void* signal_pads_device = nullptr;
    std::size_t bytes = 0;
    std::shared_ptr<void> keepalive; // releases mappings and memory
};

struct DeviceVersions {
    std::string device_name;
    std::string driver;    // e.g. "13.0" (cuda driver API version)
    std::string runtime;   // CUDA runtime
    int nccl_runtime = 0;  // ncclGetVersion()
    int nccl_compiled = 0; // NCCL_VERSION_CODE
    std::size_t l2_bytes = 0;
    std::size_t memory_bytes = 0;
};

// Times iterations on the device's stream without host synchronisation inside the timed loop:
// mark(i) records a timestamp after everything queued so far; elapsed_ms() (after synchronize())
// returns the time between consecutive marks.
class IterationTimer {
public:
    virtual ~IterationTimer() = default;
    virtual void mark(int index) = 0;
    // Milliseconds between mark(i) and mark(i + 1), for i in [0, marks - 1).
    virtual std::vector<double> elapsed_ms() = 0;
};

// A block's calls recorded once (stream capture) and replayed as one launch: the device runs them back
// to back without waiting on the host's launches of each (docs/perf.md "The graph figure").
class CapturedCalls {
public:
    virtual ~CapturedCalls() = default;
    // Queues one replay on the stream the calls were captured from.
    virtual void launch() = 0;
};

// Memory the judge owns and maps into its candidate process (docs/engine.md, "Process layout"): a
// CUDA IPC handle on the cuda backend, a memfd on the host backend.
struct SharedHandle {
    std::string ipc; // cudaIpcMemHandle_t bytes (cuda)
    int fd = -1;     // memfd (host); owned by the allocation
};

struct SharedAllocation {
    void* data = nullptr;
    std::size_t bytes = 0;
    SharedHandle handle;
};

// One pair of same-dtype, same-size tensors for Device::count_mismatches.
struct MismatchQuery {
    const void* reference = nullptr;
    const void* candidate = nullptr;
    DType dtype = DType::F32;
    std::size_t count = 0; // elements
};

struct MismatchCount {
    std::uint64_t mismatches = 0; // elements that fail PKB's rule
    std::uint64_t gross = 0;      // of those: non-finite against finite, or far beyond the tolerance
};

// What Device::scan_slots found.
struct SlotScan {
    std::vector<bool> untouched; // per slot
    std::uint64_t fingerprint = 0;
};

class Device {
public:
    virtual ~Device() = default;
    virtual bool on_host() const = 0;
    virtual int ordinal() const = 0; // -1 on the host
    virtual DeviceVersions versions() const = 0;

    virtual void* allocate(std::size_t bytes) = 0;
    virtual void release(void* pointer) = 0;
    virtual void upload(void* device, const void* host, std::size_t bytes) = 0;
    virtual void download(void* host, const void* device, std::size_t bytes) = 0;
    virtual void fill(void* device, std::uint8_t value, std::size_t bytes) = 0;
    // Waits for all work on the device. Throws DeviceError if a kernel faulted.
    virtual void synchronize() = 0;
    // Throws DeviceError if an asynchronous error is pending (NCCL's async errors included).
    virtual void check() = 0;

    // Memory another process of the same rank can map (the judge's inputs and outputs, mapped into
    // the candidate process). Zero-filled.
    virtual SharedAllocation allocate_shared(std::size_t bytes) = 0;
    virtual void release_shared(SharedAllocation& allocation) = 0;
    // The other side: maps a handle another process exported; unmap before that process frees it.
    virtual void* map_shared(const SharedHandle& handle, std::size_t bytes) = 0;
    virtual void unmap_shared(void* data, std::size_t bytes) = 0;

    virtual void* stream_handle() = 0;
    virtual void* nccl_handle() = 0;
    // Collective over the world communicator: an ncclComm_t of the ranks passing the same color,
    // ordered by key (ncclCommSplit). The device owns it until it is destroyed. nullptr on the host.
    virtual void* split_nccl(int color, int key) = 0;
    virtual SymmetricAllocation allocate_symmetric(std::size_t bytes, Rendezvous& rendezvous) = 0;

    // A timer with room for `marks` marks.
    virtual std::unique_ptr<IterationTimer> make_timer(int marks) = 0;
    // Records what `enqueue` queues on the stream into a CUDA graph, running none of it. Throws
    // DeviceError("capture", why) when the work cannot be captured (a synchronisation, an allocation or
    // the legacy stream inside it; an exception of `enqueue`); nullptr where there are no graphs (host).
    virtual std::unique_ptr<CapturedCalls> capture(const std::function<void()>& enqueue) {
        (void)enqueue;
        return nullptr;
    }
    // Evicts the last-level cache by writing a buffer several times its size on the stream (no-op
    // on the host backend).
    virtual void flush_cache() = 0;
    // Queues a copy of `bytes` from a peer device's memory (peer copy bandwidth; cuda only).
    virtual void copy_async(void* destination, const void* source, std::size_t bytes) = 0;
    // Queues one bare NCCL collective (AllReduce sum or AllGather of `count` elements per rank), for
    // calibration and for the reference-versus-NCCL benchmark. Throws on the host backend.
    virtual void bare_collective(CollectiveKind kind, const void* input, void* output, std::size_t count,
                                 DType dtype) = 0;
    // Current SM and memory clocks in MHz (NVML), or {0, 0} when unknown.
    virtual std::pair<int, int> clocks_mhz() = 0;
    // The device's state around a timed block (NVML): clocks, temperature and why clocks are held back.
    // `known` false where there is no NVML (the host backend).
    struct Telemetry {
        bool known = false;
        int sm_mhz = 0;
        int temperature_c = 0;
        unsigned long long reasons = 0; // nvmlClocksEventReasons bits
        // A slowdown that changes a block's time: power cap, hardware slowdown, thermal, power brake
        // (not idle, application clock settings or sync boost).
        bool throttled() const { return (reasons & (0x4ull | 0x8ull | 0x20ull | 0x40ull | 0x80ull)) != 0; }
    };
    virtual Telemetry telemetry() { return {}; }

    // Per query, the elements that fail PKB's rule and the gross ones among them (mismatch_rule.h),
    // counted where the data lives: the judge's check of every timed call (docs/perf.md). Synchronous.
    virtual std::vector<MismatchCount> count_mismatches(const std::vector<MismatchQuery>& queries,
                                                        double atol, double rtol) = 0;
    // Of `slots` slots of `slot_bytes` each (a multiple of 8) from `base`: whether every byte of each
    // still holds `poison` (an output slot no call has written), and slot_fingerprint.h's sum over all
    // of them (equal sums, equal bytes but for a chance of 2^-64). One pass, synchronous: it runs the
    // moment a candidate's block answers, inside the time the judge then takes out of the block.
    virtual SlotScan scan_slots(const void* base, std::size_t slot_bytes, int slots, std::uint8_t poison) = 0;
    // Launch-to-end time in microseconds of a kernel that spins `spin_us` on this device's stream; 0
    // where there is no GPU. Far longer than `spin_us` means another process's kernels held the GPU.
    virtual double probe_us(double spin_us) = 0;
};

// The host backend's device: malloc'd memory; symmetric memory in POSIX shared memory segments
// named /pkbw-<token prefix>-..., so the launcher can clean up after a crash.
std::unique_ptr<Device> make_host_device(int rank, const std::string& segment_prefix);
// The cuda backend: device `ordinal`, a stream, and an NCCL communicator set up through `rendezvous`.
// Throws DeviceError("environment", ...) when there is no GPU or NCCL cannot start.
// The stream solutions get is an ordinary (blocking) stream, so that work a solution queues on the
// legacy default stream is ordered with it and inside its timed events (docs/perf.md). The judge's
// reference gets the same kind of stream as the candidate, so neither side is timed on different
// stream semantics.
std::unique_ptr<Device> make_cuda_device(int local_rank, Rendezvous& rendezvous);
bool cuda_backend_built();
// The memory of the GPU make_cuda_device(local_rank) would open, without opening it (no context, no
// communicator); 0 when unknown.
std::size_t cuda_device_memory_bytes(int local_rank);

} // namespace pkbw::engine
