#include "device.h"
#include "mismatch_rule.h"
#include "pkbw/core/dtype.h"
#include "pkbw/core/error.h"
#include "pkbw/core/status.h"
#include "rendezvous.h"
#include "slot_fingerprint.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace pkbw::engine {
namespace {

constexpr std::size_t kPadBytes = kSignalPadWords * sizeof(std::uint32_t);

std::size_t round_up(std::size_t value, std::size_t to) {
    return (value + to - 1) / to * to;
}

// The mappings of one symmetric allocation; unmapped when the last user lets go.
struct SharedMappings {
    std::vector<std::pair<void*, std::size_t>> maps;
    std::vector<void*> peers;
    std::vector<std::uint32_t*> pads;
    ~SharedMappings() {
        for (auto [address, size] : maps) {
            ::munmap(address, size);
        }
    }
};

// Host solutions run synchronously, so a wall-clock stamp at each mark is the iteration boundary.
class HostTimer final : public IterationTimer {
public:
    explicit HostTimer(int marks)
        : stamps_(static_cast<std::size_t>(marks)) {}
    void mark(int index) override {
        stamps_.at(static_cast<std::size_t>(index)) = std::chrono::steady_clock::now();
    }
    std::vector<double> elapsed_ms() override {
        std::vector<double> times;
        for (std::size_t i = 0; i + 1 < stamps_.size(); ++i) {
            times.push_back(std::chrono::duration<double, std::milli>(stamps_[i + 1] - stamps_[i]).count());
        }
        return times;
    }

private:
    std::vector<std::chrono::steady_clock::time_point> stamps_;
};

class HostDevice final : public Device {
public:
    HostDevice(int rank, std::string prefix)
        : rank_(rank)
        , prefix_(std::move(prefix)) {}

    bool on_host() const override { return true; }
    int ordinal() const override { return -1; }
    DeviceVersions versions() const override {
        DeviceVersions v;
        v.device_name = "host";
        return v;
    }

    void* allocate(std::size_t bytes) override {
        // 256-byte alignment as cudaMalloc gives, so host candidates may use aligned vector loads.
        void* pointer = std::aligned_alloc(256, round_up(bytes == 0 ? 1 : bytes, 256));
        if (pointer == nullptr) {
            throw DeviceError(status::kKindEnvironment,
                              "host allocation of " + std::to_string(bytes) + " bytes failed");
        }
        return pointer;
    }
    void release(void* pointer) override { std::free(pointer); }
    void upload(void* device, const void* host, std::size_t bytes) override {
        std::memmove(device, host, bytes);
    }
    void download(void* host, const void* device, std::size_t bytes) override {
        std::memmove(host, device, bytes);
    }
    void fill(void* device, std::uint8_t value, std::size_t bytes) override {
        std::memset(device, value, bytes);
    }
    void synchronize() override {}
    void check() override {}
    void* stream_handle() override { return nullptr; }
    void* nccl_handle() override { return nullptr; }
    void* split_nccl(int, int) override { return nullptr; }
    std::unique_ptr<IterationTimer> make_timer(int marks) override {
        return std::make_unique<HostTimer>(marks);
    }
    void flush_cache() override {}
    void bare_collective(CollectiveKind, const void*, void*, std::size_t, DType) override {
        throw DeviceError(status::kKindEnvironment, "bare NCCL collectives need the cuda backend");
    }
    std::pair<int, int> clocks_mhz() override { return {0, 0}; }
    void copy_async(void* destination, const void* source, std::size_t bytes) override {
        std::memcpy(destination, source, bytes);
    }
    std::vector<MismatchCount> count_mismatches(const std::vector<MismatchQuery>& queries, double atol,
                                                double rtol) override {
        std::vector<MismatchCount> counts;
        for (const auto& q : queries) {
            const std::size_t size = dtype_size(q.dtype);
            const auto* ref = static_cast<const std::byte*>(q.reference);
            const auto* cand = static_cast<const std::byte*>(q.candidate);
            MismatchCount count;
            for (std::size_t i = 0; i < q.count; ++i) {
                const ElementVerdict verdict = element_verdict(
                    element_to_f32(q.dtype, ref + i * size), element_to_f32(q.dtype, cand + i * size),
                    static_cast<float>(atol), static_cast<float>(rtol));
                count.mismatches += verdict != ElementVerdict::Match;
                count.gross += verdict == ElementVerdict::Gross;
            }
            counts.push_back(count);
        }
        return counts;
    }
    SlotScan scan_slots(const void* base, std::size_t slot_bytes, int slots, std::uint8_t poison) override {
        // Last slot first: a block's last call is the one whose work can be left to finish after the
        // answer, and this scan runs inside the time the judge does not count.
        SlotScan scan;
        scan.untouched.assign(static_cast<std::size_t>(std::max(slots, 0)), true);
        const auto* bytes_at = static_cast<const unsigned char*>(base);
        std::uint64_t poison_word;
        std::memset(&poison_word, poison, sizeof poison_word);
        const std::size_t slot_words = slot_bytes / 8;
        for (int k = slots - 1; k >= 0; --k) {
            bool untouched = true;
            for (std::size_t i = 0; i < slot_words; ++i) {
                const std::size_t index = static_cast<std::size_t>(k) * slot_words + i;
                std::uint64_t word;
                std::memcpy(&word, bytes_at + 8 * index, 8);
                untouched = untouched && word == poison_word;
                scan.fingerprint += fingerprint_term(word, index);
            }
            scan.untouched[static_cast<std::size_t>(k)] = untouched;
        }
        return scan;
    }
    double probe_us(double) override { return 0; }

    SharedAllocation allocate_shared(std::size_t bytes) override {
        const std::size_t size = round_up(bytes == 0 ? 1 : bytes, 4096);
        const int fd = static_cast<int>(::syscall(SYS_memfd_create, "pkbw-shared", MFD_CLOEXEC));
        if (fd < 0) {
            throw DeviceError(status::kKindEnvironment, std::string("memfd_create: ") + std::strerror(errno));
        }
        if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
            const int code = errno;
            ::close(fd);
            throw DeviceError(status::kKindEnvironment, "ftruncate of a shared buffer of " +
                                                            std::to_string(size) +
                                                            " bytes: " + std::strerror(code));
        }
        void* address = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (address == MAP_FAILED) {
            const int code = errno;
            ::close(fd);
            throw DeviceError(status::kKindEnvironment, "mmap of a shared buffer of " + std::to_string(size) +
                                                            " bytes: " + std::strerror(code));
        }
        SharedAllocation allocation;
        allocation.data = address;
        allocation.bytes = bytes;
        allocation.handle.fd = fd;
        return allocation;
    }
    void release_shared(SharedAllocation& allocation) override {
        if (allocation.data != nullptr) {
            ::munmap(allocation.data, round_up(allocation.bytes == 0 ? 1 : allocation.bytes, 4096));
        }
        if (allocation.handle.fd >= 0) {
            ::close(allocation.handle.fd);
        }
        allocation = {};
    }
    void* map_shared(const SharedHandle& handle, std::size_t bytes) override {
        void* address = ::mmap(nullptr, round_up(bytes == 0 ? 1 : bytes, 4096), PROT_READ | PROT_WRITE,
                               MAP_SHARED, handle.fd, 0);
        if (address == MAP_FAILED) {
            throw DeviceError(status::kKindEnvironment,
                              std::string("mmap of the judge's buffer: ") + std::strerror(errno));
        }
        return address;
    }
    void unmap_shared(void* data, std::size_t bytes) override {
        ::munmap(data, round_up(bytes == 0 ? 1 : bytes, 4096));
    }

    SymmetricAllocation allocate_symmetric(std::size_t bytes, Rendezvous& rendezvous) override {
        const int world = rendezvous.world_size();
        const std::size_t buffer_bytes = round_up(bytes == 0 ? 1 : bytes, 4096);
        const std::size_t segment_bytes = buffer_bytes + kPadBytes;
        const int index = next_index_++;
        auto name_of = [&](int r) { return prefix_ + "-" + std::to_string(index) + "-" + std::to_string(r); };

        auto mappings = std::make_shared<SharedMappings>();
        mappings->peers.resize(world);
        mappings->pads.resize(world);
        auto map_segment = [&](int r, bool create) {
            const std::string name = name_of(r);
            const int fd = ::shm_open(name.c_str(), create ? (O_CREAT | O_EXCL | O_RDWR) : O_RDWR, 0600);
            if (fd < 0) {
                throw DeviceError(status::kKindEnvironment, "shm_open " + name + ": " + std::strerror(errno));
            }
            if (create && ::ftruncate(fd, static_cast<off_t>(segment_bytes)) != 0) {
                ::close(fd);
                throw DeviceError(status::kKindEnvironment,
                                  "ftruncate " + name + ": " + std::strerror(errno));
            }
            void* address = ::mmap(nullptr, segment_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            ::close(fd);
            if (address == MAP_FAILED) {
                throw DeviceError(status::kKindEnvironment, "mmap " + name + ": " + std::strerror(errno));
            }
            mappings->maps.emplace_back(address, segment_bytes);
            mappings->peers[r] = address;
            mappings->pads[r] = reinterpret_cast<std::uint32_t*>(static_cast<char*>(address) + buffer_bytes);
        };
        // Create (zero-filled by ftruncate), wait for every rank, map the peers, wait, then unlink our
        // name: the memory lives on in the mappings and nothing is left in /dev/shm.
        map_segment(rank_, true);
        rendezvous.barrier();
        for (int r = 0; r < world; ++r) {
            if (r != rank_) {
                map_segment(r, false);
            }
        }
        rendezvous.barrier();
        ::shm_unlink(name_of(rank_).c_str());

        SymmetricAllocation allocation;
        allocation.peers = mappings->peers;
        allocation.signal_pads = mappings->pads;
        allocation.bytes = bytes;
        allocation.keepalive = mappings;
        return allocation;
    }

private:
    int rank_;
    std::string prefix_;
    int next_index_ = 0;
};

} // namespace

std::unique_ptr<Device> make_host_device(int rank, const std::string& segment_prefix) {
    return std::make_unique<HostDevice>(rank, segment_prefix);
}

} // namespace pkbw::engine
