// Internal to the rendezvous (rendezvous.cpp, the ranks' client; rendezvous_server.cpp, rank 0's
// server): the frames both sides exchange over TCP, their socket helpers, and the server's interface.
#pragma once

#include "rendezvous.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

namespace pkbw::engine::rendezvous_wire {

constexpr std::uint32_t kMagic = 0x706B6277; // "pkbw"
constexpr std::uint32_t kOpHello = 1;
constexpr std::uint32_t kOpAllGather = 2;
constexpr std::uint64_t kMaxPayload = 1ull << 34; // 16 GiB: anything larger is a corrupt frame

struct FrameHeader {
    std::uint32_t magic;
    std::uint32_t op;
    std::uint32_t rank;
    std::uint32_t reserved;
    std::uint64_t sequence;
    std::uint64_t length;
};

class Socket {
public:
    Socket() = default;
    explicit Socket(int fd)
        : fd_(fd) {}
    ~Socket() { reset(); }
    Socket(Socket&& other) noexcept
        : fd_(other.fd_) {
        other.fd_ = -1;
    }
    Socket& operator=(Socket&& other) noexcept {
        if (this != &other) {
            reset();
            fd_ = other.fd_;
            other.fd_ = -1;
        }
        return *this;
    }
    int get() const { return fd_; }
    void reset() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

bool send_frame(int fd, std::uint32_t op, std::uint32_t rank, std::uint64_t sequence,
                std::span<const std::byte> body);
// False on a closed or broken connection and on a frame that is not pkbw's (magic, length).
bool receive_frame(int fd, FrameHeader& header, std::vector<std::byte>& body);

// An IPv4 literal, else a host name (MASTER_ADDR=node017 under SLURM or torchrun), resolved once.
sockaddr_in make_address(const std::string& address, int port);

// Rank 0's server: one thread per connected rank; all-gathers complete when every rank contributed.
class Server {
public:
    Server(const RendezvousConfig& config);

    // Waits until no client is connected, or `timeout` passes.
    void wait_for_disconnects(std::chrono::milliseconds timeout) const;

private:
    struct Round {
        std::vector<std::vector<std::byte>> parts;
        int received = 0;
        int delivered = 0;
    };

    void adopt_listener(const RendezvousConfig& config);
    void bind_listener(const RendezvousConfig& config);
    void accept_loop();
    void serve(Socket socket);

    RendezvousConfig config_;
    std::atomic<int> connections_{0};
    Socket listener_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::map<std::uint64_t, Round> rounds_;
};

} // namespace pkbw::engine::rendezvous_wire
