// The cuda backend's device: one GPU per rank, a blocking stream (ordered with the legacy default stream), an
// NCCL communicator over all ranks, and symmetric memory through CUDA IPC handles exchanged over the
// rendezvous.
#define PKBW_BACKEND_CUDA 1
#include "cuda_checks.h"
#include "cuda_graph.h"
#include "device.h"
#include "pkbw/core/status.h"
#include "pkbw/tracer_control.h"
#include "rendezvous.h"

#include <algorithm>
#include <cstring>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <nccl.h>

namespace pkbw::engine {
namespace {

constexpr std::size_t kPadBytes = kSignalPadWords * sizeof(std::uint32_t);

void check_cuda(cudaError_t status, const char* what) {
    if (status != cudaSuccess) {
        throw DeviceError(status::kKindCudaError, std::string(what) + ": " + cudaGetErrorName(status) + ": " +
                                                      cudaGetErrorString(status));
    }
}

void check_nccl(ncclResult_t status, const char* what) {
    if (status != ncclSuccess) {
        throw DeviceError(status::kKindNcclError, std::string(what) + ": " + ncclGetErrorString(status));
    }
}

// NVML through dlopen: the driver ships libnvidia-ml.so.1 but no header comes with the toolkit, and
// pkbw must not need it at link time. Devices are matched by PCI bus id, not index, since NVML and
// CUDA may order devices differently.
struct Nvml {
    using InitFn = int (*)();
    using ByPciFn = int (*)(const char*, void**);
    using ClockFn = int (*)(void*, int, unsigned int*);
    using ReasonsFn = int (*)(void*, unsigned long long*);
    using TemperatureFn = int (*)(void*, int, unsigned int*);
    void* library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    InitFn init = library ? reinterpret_cast<InitFn>(::dlsym(library, "nvmlInit_v2")) : nullptr;
    ByPciFn by_pci =
        library ? reinterpret_cast<ByPciFn>(::dlsym(library, "nvmlDeviceGetHandleByPciBusId_v2")) : nullptr;
    ClockFn clock = library ? reinterpret_cast<ClockFn>(::dlsym(library, "nvmlDeviceGetClockInfo")) : nullptr;
    // The older name first: both exist in current drivers, the newer alone in future ones.
    ReasonsFn reasons =
        library
            ? reinterpret_cast<ReasonsFn>(::dlsym(library, "nvmlDeviceGetCurrentClocksThrottleReasons")
                                              ?: ::dlsym(library, "nvmlDeviceGetCurrentClocksEventReasons"))
            : nullptr;
    TemperatureFn temperature =
        library ? reinterpret_cast<TemperatureFn>(::dlsym(library, "nvmlDeviceGetTemperature")) : nullptr;
    bool ready = init && by_pci && clock && init() == 0;

    static Nvml& get() {
        static Nvml nvml;
        return nvml;
    }
    void* handle(int ordinal) const {
        char bus_id[64] = {};
        void* found = nullptr;
        if (!ready || cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), ordinal) != cudaSuccess ||
            by_pci(bus_id, &found) != 0) {
            return nullptr;
        }
        return found;
    }
};

std::pair<int, int> query_clocks_mhz(int ordinal) {
    const Nvml& nvml = Nvml::get();
    void* handle = nvml.handle(ordinal);
    if (handle == nullptr) {
        return {0, 0};
    }
    unsigned int sm = 0, memory = 0;
    constexpr int kClockSm = 1, kClockMem = 2; // nvmlClockType_t
    nvml.clock(handle, kClockSm, &sm);
    nvml.clock(handle, kClockMem, &memory);
    return {static_cast<int>(sm), static_cast<int>(memory)};
}

Device::Telemetry query_telemetry(void* handle) {
    Device::Telemetry t;
    const Nvml& nvml = Nvml::get();
    if (handle == nullptr) {
        return t;
    }
    unsigned int sm = 0, celsius = 0;
    unsigned long long reasons = 0;
    t.known = nvml.clock(handle, 1, &sm) == 0;
    t.sm_mhz = static_cast<int>(sm);
    if (nvml.temperature && nvml.temperature(handle, 0, &celsius) == 0) { // NVML_TEMPERATURE_GPU
        t.temperature_c = static_cast<int>(celsius);
    }
    if (nvml.reasons && nvml.reasons(handle, &reasons) == 0) {
        t.reasons = reasons;
    }
    return t;
}

std::string version_text(int version) {
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// Peer mappings and device tables of one symmetric allocation. Released in the owning rank only
// after every rank has closed its view of the others (see CudaDevice::~CudaDevice's barrier).
struct IpcAllocation {
    int rank = 0;
    void* own = nullptr;
    std::vector<void*> opened; // peers' buffers opened through IPC
    void* peers_table = nullptr;
    void* pads_table = nullptr;
    void close_peers() {
        for (void* p : opened) {
            cudaIpcCloseMemHandle(p);
        }
        opened.clear();
    }
    ~IpcAllocation() {
        close_peers();
        cudaFree(peers_table);
        cudaFree(pads_table);
        cudaFree(own);
    }
};

// Events kept between timers: a timed block's timer holds two events a call, and creating and destroying
// a hundred of them with every request cost the worker about 0.1 ms inside the judge's clock.
class EventPool {
public:
    EventPool() = default;
    EventPool(const EventPool&) = delete;
    EventPool& operator=(const EventPool&) = delete;
    ~EventPool() {
        for (cudaEvent_t event : spare_) {
            cudaEventDestroy(event);
        }
    }
    cudaEvent_t take() {
        {
            std::lock_guard lock(mutex_);
            if (!spare_.empty()) {
                const cudaEvent_t event = spare_.back();
                spare_.pop_back();
                return event;
            }
        }
        cudaEvent_t event = nullptr;
        check_cuda(cudaEventCreate(&event), "cudaEventCreate");
        return event;
    }
    void give(cudaEvent_t event) {
        std::lock_guard lock(mutex_);
        spare_.push_back(event);
    }

private:
    std::mutex mutex_;
    std::vector<cudaEvent_t> spare_;
};

class CudaTimer final : public IterationTimer {
public:
    CudaTimer(int marks, cudaStream_t stream, std::shared_ptr<EventPool> pool)
        : stream_(stream)
        , pool_(std::move(pool)) {
        events_.reserve(static_cast<std::size_t>(marks));
        for (int i = 0; i < marks; ++i) {
            events_.push_back(pool_->take());
        }
    }
    ~CudaTimer() override {
        for (auto event : events_) {
            pool_->give(event);
        }
    }
    CudaTimer(const CudaTimer&) = delete;
    CudaTimer& operator=(const CudaTimer&) = delete;
    void mark(int index) override {
        check_cuda(cudaEventRecord(events_.at(static_cast<std::size_t>(index)), stream_), "cudaEventRecord");
    }
    std::vector<double> elapsed_ms() override {
        std::vector<double> times;
        for (std::size_t i = 0; i + 1 < events_.size(); ++i) {
            float ms = 0;
            check_cuda(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]), "cudaEventElapsedTime");
            times.push_back(ms);
        }
        return times;
    }

private:
    cudaStream_t stream_;
    std::shared_ptr<EventPool> pool_;
    std::vector<cudaEvent_t> events_;
};

class CudaDevice final : public Device {
public:
    CudaDevice(int local_rank, Rendezvous& rendezvous)
        : rendezvous_(rendezvous) {
        int count = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
            throw DeviceError(status::kKindEnvironment, "no CUDA device is visible to this process");
        }
        // Launchers that pin one GPU per process (CUDA_VISIBLE_DEVICES) leave a single device.
        ordinal_ = count == 1 ? 0 : local_rank;
        if (ordinal_ >= count) {
            throw DeviceError(status::kKindEnvironment, "local rank " + std::to_string(local_rank) +
                                                            " needs GPU " + std::to_string(local_rank) +
                                                            " but only " + std::to_string(count) +
                                                            " are visible");
        }
        check_cuda(cudaSetDevice(ordinal_), "cudaSetDevice");
        // No L2 set aside for persisting accesses (docs/perf.md "Cold L2"): lines a side pinned in one
        // block would be warm in the next. Devices without the carve-out refuse it, which is the same.
        if (cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0) != cudaSuccess) {
            cudaGetLastError();
        }
        check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamDefault), "cudaStreamCreate");

        ncclUniqueId id{};
        if (rendezvous.rank() == 0) {
            check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
        }
        const auto ids = rendezvous.all_gather(std::as_bytes(std::span(&id, 1)));
        std::memcpy(&id, ids[0].data(), sizeof(id));
        check_nccl(ncclCommInitRank(&comm_, rendezvous.world_size(), id, rendezvous.rank()),
                   "ncclCommInitRank");
    }

    ~CudaDevice() override {
        cudaDeviceSynchronize();
        // Every rank closes its IPC views of the others before any owner frees the memory behind them.
        // Allocations are collective, so every rank has the same number and reaches the same barrier.
        if (!allocations_.empty()) {
            for (auto& allocation : allocations_) {
                allocation->close_peers();
            }
            try {
                rendezvous_.barrier();
            } catch (...) {
                // A peer is gone; its process exit already released what it mapped.
            }
        }
        allocations_.clear();
        if (flush_buffer_ != nullptr) {
            cudaFree(flush_buffer_);
        }
        if (scan_buffer_ != nullptr) {
            cudaFree(scan_buffer_);
        }
        for (ncclComm_t sub : sub_comms_) {
            ncclCommDestroy(sub);
        }
        if (comm_ != nullptr) {
            ncclCommDestroy(comm_);
        }
        if (stream_ != nullptr) {
            cudaStreamDestroy(stream_);
        }
    }

    bool on_host() const override { return false; }
    int ordinal() const override { return ordinal_; }

    DeviceVersions versions() const override {
        DeviceVersions v;
        cudaDeviceProp props{};
        if (cudaGetDeviceProperties(&props, ordinal_) == cudaSuccess) {
            v.device_name = props.name;
            v.l2_bytes = static_cast<std::size_t>(props.l2CacheSize);
            v.memory_bytes = props.totalGlobalMem;
        }
        int driver = 0, runtime = 0;
        cudaDriverGetVersion(&driver);
        cudaRuntimeGetVersion(&runtime);
        v.driver = version_text(driver);
        v.runtime = version_text(runtime);
        ncclGetVersion(&v.nccl_runtime);
        v.nccl_compiled = NCCL_VERSION_CODE;
        return v;
    }

    void* allocate(std::size_t bytes) override {
        void* pointer = nullptr;
        check_cuda(cudaMalloc(&pointer, bytes == 0 ? 1 : bytes), "cudaMalloc");
        return pointer;
    }
    void release(void* pointer) override { cudaFree(pointer); }
    void upload(void* device, const void* host, std::size_t bytes) override {
        check_cuda(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "upload (cudaMemcpy)");
    }
    void download(void* host, const void* device, std::size_t bytes) override {
        check_cuda(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "download (cudaMemcpy)");
    }
    void fill(void* device, std::uint8_t value, std::size_t bytes) override {
        check_cuda(cudaMemset(device, value, bytes), "cudaMemset");
    }
    void synchronize() override {
        check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        check();
    }
    void check() override {
        check_cuda(cudaGetLastError(), "pending CUDA error");
        ncclResult_t async = ncclSuccess;
        if (comm_ != nullptr && ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess) {
            check_nccl(async, "NCCL asynchronous error");
        }
        for (ncclComm_t sub : sub_comms_) {
            if (ncclCommGetAsyncError(sub, &async) == ncclSuccess && async != ncclSuccess)
                check_nccl(async, "NCCL asynchronous error (a sub-communicator)");
        }
    }
    void* stream_handle() override { return stream_; }
    void* nccl_handle() override { return comm_; }
    void* split_nccl(int color, int key) override {
        ncclComm_t sub = nullptr;
        check_nccl(ncclCommSplit(comm_, color, key, &sub, nullptr), "ncclCommSplit");
        sub_comms_.push_back(sub);
        return sub;
    }
    std::unique_ptr<IterationTimer> make_timer(int marks) override {
        return std::make_unique<CudaTimer>(marks, stream_, events_);
    }
    std::unique_ptr<CapturedCalls> capture(const std::function<void()>& enqueue) override {
        return capture_cuda_graph(stream_, enqueue);
    }
    void flush_cache() override {
        if (flush_buffer_ == nullptr) {
            int l2 = 0;
            cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ordinal_);
            flush_bytes_ = static_cast<std::size_t>(std::max(l2, 1 << 20)) * 3;
            check_cuda(cudaMalloc(&flush_buffer_, flush_bytes_), "cudaMalloc (cache flush)");
        }
        check_cuda(cudaMemsetAsync(flush_buffer_, ++flush_value_, flush_bytes_, stream_),
                   "cudaMemsetAsync (flush)");
    }
    void bare_collective(CollectiveKind kind, const void* input, void* output, std::size_t count,
                         DType dtype) override {
        if (kind == CollectiveKind::AllReduce) {
            check_nccl(ncclAllReduce(input, output, count, nccl_dtype(dtype), ncclSum, comm_, stream_),
                       "ncclAllReduce");
        } else if (kind == CollectiveKind::AllGather) {
            check_nccl(ncclAllGather(input, output, count, nccl_dtype(dtype), comm_, stream_),
                       "ncclAllGather");
        } else {
            throw DeviceError(status::kKindNcclError,
                              "bare collective not supported: " + std::string(collective_kind_name(kind)));
        }
    }
    std::pair<int, int> clocks_mhz() override { return query_clocks_mhz(ordinal_); }
    Telemetry telemetry() override {
        if (!nvml_looked_up_) {
            nvml_handle_ = Nvml::get().handle(ordinal_);
            nvml_looked_up_ = true;
        }
        return query_telemetry(nvml_handle_);
    }
    std::vector<MismatchCount> count_mismatches(const std::vector<MismatchQuery>& queries, double atol,
                                                double rtol) override {
        std::vector<MismatchCount> counts(queries.size());
        if (queries.empty()) {
            return counts;
        }
        unsigned long long* device_counts = nullptr; // [mismatches, gross] per query
        const std::size_t bytes = 2 * queries.size() * sizeof(unsigned long long);
        check_cuda(cudaMalloc(&device_counts, bytes), "cudaMalloc (mismatch counts)");
        const std::unique_ptr<unsigned long long, decltype(&cudaFree)> owned(device_counts, &cudaFree);
        check_cuda(cudaMemsetAsync(device_counts, 0, bytes, stream_), "cudaMemsetAsync (mismatch counts)");
        for (std::size_t q = 0; q < queries.size(); ++q) {
            check_cuda(launch_count_mismatches(queries[q].reference, queries[q].candidate, queries[q].dtype,
                                               queries[q].count, static_cast<float>(atol),
                                               static_cast<float>(rtol), device_counts + 2 * q, stream_),
                       "the mismatch count kernel");
        }
        std::vector<unsigned long long> host(2 * queries.size());
        check_cuda(cudaMemcpyAsync(host.data(), device_counts, bytes, cudaMemcpyDeviceToHost, stream_),
                   "cudaMemcpyAsync (mismatch counts)");
        check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (mismatch counts)");
        for (std::size_t q = 0; q < queries.size(); ++q) {
            counts[q] = {host[2 * q], host[2 * q + 1]};
        }
        return counts;
    }
    SlotScan scan_slots(const void* base, std::size_t slot_bytes, int slots, std::uint8_t poison) override {
        SlotScan scan;
        scan.untouched.assign(static_cast<std::size_t>(std::max(slots, 0)), true);
        if (slots <= 0) {
            return scan;
        }
        // Kept between calls: the scan runs the moment a candidate's block answers, so it is kept short.
        // One buffer: the fingerprint's sum (two words), then a flag per slot.
        const std::size_t bytes =
            2 * sizeof(unsigned int) + static_cast<std::size_t>(slots) * sizeof(unsigned int);
        if (scan_capacity_ < bytes) {
            if (scan_buffer_ != nullptr) {
                cudaFree(scan_buffer_);
            }
            check_cuda(cudaMalloc(&scan_buffer_, bytes), "cudaMalloc (slot scan)");
            scan_capacity_ = bytes;
        }
        auto* sum = reinterpret_cast<unsigned long long*>(scan_buffer_);
        unsigned int* touched = scan_buffer_ + 2;
        check_cuda(cudaMemsetAsync(scan_buffer_, 0, bytes, stream_), "cudaMemsetAsync (slot scan)");
        check_cuda(launch_scan_slots(base, slot_bytes, slots, poison, touched, sum, stream_),
                   "the slot scan kernel");
        std::vector<unsigned int> host(bytes / sizeof(unsigned int));
        check_cuda(cudaMemcpyAsync(host.data(), scan_buffer_, bytes, cudaMemcpyDeviceToHost, stream_),
                   "cudaMemcpyAsync (slot scan)");
        check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (slot scan)");
        std::memcpy(&scan.fingerprint, host.data(), sizeof scan.fingerprint);
        for (std::size_t k = 0; k < scan.untouched.size(); ++k) {
            scan.untouched[k] = host[2 + k] == 0;
        }
        return scan;
    }
    double probe_us(double spin_us) override {
        CudaTimer timer(2, stream_, events_);
        timer.mark(0);
        check_cuda(launch_probe(spin_us, stream_), "the probe kernel");
        timer.mark(1);
        check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (probe)");
        return timer.elapsed_ms().at(0) * 1000.0;
    }
    void copy_async(void* destination, const void* source, std::size_t bytes) override {
        check_cuda(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault, stream_),
                   "cudaMemcpyAsync");
    }

    SharedAllocation allocate_shared(std::size_t bytes) override {
        SharedAllocation allocation;
        allocation.bytes = bytes;
        allocation.data = allocate(bytes);
        check_cuda(cudaMemset(allocation.data, 0, bytes == 0 ? 1 : bytes), "cudaMemset (shared)");
        cudaIpcMemHandle_t handle{};
        check_cuda(cudaIpcGetMemHandle(&handle, allocation.data), "cudaIpcGetMemHandle");
        allocation.handle.ipc.assign(reinterpret_cast<const char*>(&handle), sizeof handle);
        return allocation;
    }
    void release_shared(SharedAllocation& allocation) override {
        if (allocation.data != nullptr) {
            cudaFree(allocation.data);
        }
        allocation = {};
    }
    void* map_shared(const SharedHandle& handle, std::size_t) override {
        cudaIpcMemHandle_t ipc{};
        if (handle.ipc.size() != sizeof ipc) {
            throw DeviceError(status::kKindCudaError, "a shared buffer's IPC handle has " +
                                                          std::to_string(handle.ipc.size()) + " bytes, not " +
                                                          std::to_string(sizeof ipc));
        }
        std::memcpy(&ipc, handle.ipc.data(), sizeof ipc);
        void* data = nullptr;
        check_cuda(cudaIpcOpenMemHandle(&data, ipc, cudaIpcMemLazyEnablePeerAccess),
                   "cudaIpcOpenMemHandle (the judge's buffer)");
        return data;
    }
    void unmap_shared(void* data, std::size_t) override { cudaIpcCloseMemHandle(data); }

    SymmetricAllocation allocate_symmetric(std::size_t bytes, Rendezvous& rendezvous) override {
        const int world = rendezvous.world_size();
        const int rank = rendezvous.rank();
        const std::size_t buffer_bytes = (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096;
        auto allocation = std::make_shared<IpcAllocation>();
        allocation->rank = rank;
        check_cuda(cudaMalloc(&allocation->own, buffer_bytes + kPadBytes), "cudaMalloc (symmetric)");
        check_cuda(cudaMemset(allocation->own, 0, buffer_bytes + kPadBytes), "cudaMemset (symmetric)");
        check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize (symmetric)");
        cudaIpcMemHandle_t handle{};
        check_cuda(cudaIpcGetMemHandle(&handle, allocation->own), "cudaIpcGetMemHandle");
        const auto handles = rendezvous.all_gather(std::as_bytes(std::span(&handle, 1)));

        SymmetricAllocation result;
        result.bytes = bytes;
        result.peers.resize(world);
        result.signal_pads.resize(world);
        for (int r = 0; r < world; ++r) {
            void* base = allocation->own;
            if (r != rank) {
                cudaIpcMemHandle_t peer{};
                std::memcpy(&peer, handles[r].data(), sizeof(peer));
                check_cuda(cudaIpcOpenMemHandle(&base, peer, cudaIpcMemLazyEnablePeerAccess),
                           "cudaIpcOpenMemHandle");
                allocation->opened.push_back(base);
            }
            result.peers[r] = base;
            result.signal_pads[r] = reinterpret_cast<std::uint32_t*>(static_cast<char*>(base) + buffer_bytes);
        }
        const std::size_t table_bytes = sizeof(void*) * world;
        check_cuda(cudaMalloc(&allocation->peers_table, table_bytes), "cudaMalloc (peer table)");
        check_cuda(cudaMalloc(&allocation->pads_table, table_bytes), "cudaMalloc (pad table)");
        upload(allocation->peers_table, result.peers.data(), table_bytes);
        upload(allocation->pads_table, result.signal_pads.data(), table_bytes);
        result.peers_device = allocation->peers_table;
        result.signal_pads_device = allocation->pads_table;
        // A traced candidate's kernels given a pointer into a peer's buffer or these tables communicate
        // through their own code: the tracer marks them (nothing happens untraced or at W = 1).
        if (world > 1) {
            for (int r = 0; r < world; ++r)
                if (r != rank)
                    tracer::note_peer_memory(result.peers[r], buffer_bytes + kPadBytes);
            tracer::note_peer_memory(allocation->peers_table, table_bytes);
            tracer::note_peer_memory(allocation->pads_table, table_bytes);
        }
        result.keepalive = allocation;
        allocations_.push_back(allocation);
        // Nobody may touch a peer's buffer before every rank has mapped every buffer.
        rendezvous.barrier();
        return result;
    }

private:
    Rendezvous& rendezvous_;
    int ordinal_ = 0;
    void* nvml_handle_ = nullptr; // NVML's handle of this device (telemetry), looked up once
    bool nvml_looked_up_ = false;
    cudaStream_t stream_ = nullptr;
    std::shared_ptr<EventPool> events_ = std::make_shared<EventPool>(); // the timers' events
    ncclComm_t comm_ = nullptr;
    std::vector<ncclComm_t> sub_comms_; // from split_nccl, destroyed before comm_
    std::vector<std::shared_ptr<IpcAllocation>> allocations_;
    void* flush_buffer_ = nullptr;
    unsigned int* scan_buffer_ = nullptr; // scan_slots' sum and flags (8-byte aligned: cudaMalloc's)
    std::size_t scan_capacity_ = 0;
    std::size_t flush_bytes_ = 0;
    unsigned char flush_value_ = 0;
};

} // namespace

std::unique_ptr<Device> make_cuda_device(int local_rank, Rendezvous& rendezvous) {
    return std::make_unique<CudaDevice>(local_rank, rendezvous);
}

std::size_t cuda_device_memory_bytes(int local_rank) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        return 0;
    }
    const int ordinal = count == 1 ? 0 : local_rank; // as CudaDevice chooses
    cudaDeviceProp props{};
    return ordinal < count && cudaGetDeviceProperties(&props, ordinal) == cudaSuccess ? props.totalGlobalMem
                                                                                      : 0;
}

bool cuda_backend_built() {
    return true;
}

} // namespace pkbw::engine
