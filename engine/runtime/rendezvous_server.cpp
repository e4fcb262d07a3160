// Rank 0's side of the rendezvous (rendezvous_wire.h): the server that admits each rank by the run's
// token and answers all-gathers once every rank contributed, and the frame I/O both sides use.
#include "pkbw/core/error.h"
#include "rendezvous_wire.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <thread>

namespace pkbw::engine::rendezvous_wire {
namespace {

bool write_all(int fd, const void* data, std::size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

bool read_all(int fd, void* data, std::size_t size) {
    auto* p = static_cast<char*>(data);
    while (size > 0) {
        const ssize_t n = ::recv(fd, p, size, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

bool tokens_equal(std::span<const std::byte> a, const std::string& b) {
    if (a.size() != b.size()) {
        return false;
    }
    unsigned char diff = 0; // constant time: a wrong token learns nothing from timing
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
    }
    return diff == 0;
}

} // namespace

bool send_frame(int fd, std::uint32_t op, std::uint32_t rank, std::uint64_t sequence,
                std::span<const std::byte> body) {
    const FrameHeader header{kMagic, op, rank, 0, sequence, body.size()};
    return write_all(fd, &header, sizeof(header)) && write_all(fd, body.data(), body.size());
}

bool receive_frame(int fd, FrameHeader& header, std::vector<std::byte>& body) {
    if (!read_all(fd, &header, sizeof(header)) || header.magic != kMagic || header.length > kMaxPayload) {
        return false;
    }
    body.resize(header.length);
    return read_all(fd, body.data(), body.size());
}

// An IPv4 literal, else a host name (MASTER_ADDR=node017 under SLURM or torchrun), resolved once.
sockaddr_in make_address(const std::string& address, int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) == 1) {
        return addr;
    }
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(address.c_str(), nullptr, &hints, &found);
    if (rc != 0 || found == nullptr) {
        throw RendezvousError("rendezvous: MASTER_ADDR '" + address +
                              "' does not resolve to an IPv4 address: " +
                              (rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc)));
    }
    addr.sin_addr = reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr;
    ::freeaddrinfo(found);
    return addr;
}

Server::Server(const RendezvousConfig& config)
    : config_(config) {
    if (config.listen_fd >= 0) {
        adopt_listener(config);
    } else {
        bind_listener(config);
    }
    // The server lives as long as rank 0's process; threads are detached and end with it.
    std::thread([this] { accept_loop(); }).detach();
}

// The launcher chose the port and kept it bound: nobody else can have taken it. The socket must
// be what the environment says it is (a listening socket on `port`), or the ranks would wait for
// a server that never answers.
void Server::adopt_listener(const RendezvousConfig& config) {
    listener_ = Socket(config.listen_fd);
    sockaddr_in bound{};
    socklen_t length = sizeof(bound);
    int listening = 0;
    socklen_t flag_length = sizeof(listening);
    if (::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&bound), &length) != 0 ||
        bound.sin_family != AF_INET ||
        ::getsockopt(listener_.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &flag_length) != 0 ||
        listening == 0) {
        throw RendezvousError("rendezvous: PKBW_RDZV_LISTEN_FD=" + std::to_string(config.listen_fd) +
                              " is not a listening TCP socket");
    }
    if (ntohs(bound.sin_port) != config.port) {
        throw RendezvousError("rendezvous: PKBW_RDZV_LISTEN_FD=" + std::to_string(config.listen_fd) +
                              " listens on port " + std::to_string(ntohs(bound.sin_port)) +
                              ", not the rendezvous port " + std::to_string(config.port));
    }
}

void Server::bind_listener(const RendezvousConfig& config) {
    listener_ = Socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (listener_.get() < 0) {
        throw RendezvousError(std::string("rendezvous: socket: ") + std::strerror(errno));
    }
    const int one = 1;
    ::setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    const sockaddr_in addr = make_address(config.address, config.port);
    if (::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
        throw RendezvousError("rendezvous: cannot bind " + config.address + ":" +
                              std::to_string(config.port) + ": " + std::strerror(errno));
    }
    if (::listen(listener_.get(), config.world_size + 8) != 0) {
        throw RendezvousError(std::string("rendezvous: listen: ") + std::strerror(errno));
    }
}

void Server::accept_loop() {
    for (;;) {
        const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            return;
        }
        std::thread([this, fd] { serve(Socket(fd)); }).detach();
    }
}

void Server::serve(Socket socket) {
    const int one = 1;
    ::setsockopt(socket.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    FrameHeader header{};
    std::vector<std::byte> body;
    // The first frame must be a hello carrying the token; anything else is dropped silently.
    if (!receive_frame(socket.get(), header, body) || header.op != kOpHello ||
        !tokens_equal(body, config_.token) || header.rank >= static_cast<std::uint32_t>(config_.world_size)) {
        return;
    }
    const int rank = static_cast<int>(header.rank);
    // Counted while connected: rank 0 waits for every peer to hang up before its process may end
    // (a server thread may still be writing a peer's last reply when rank 0 leaves its own).
    connections_.fetch_add(1);
    struct Disconnect {
        std::atomic<int>& count;
        ~Disconnect() { count.fetch_sub(1); }
    } disconnect{connections_};
    if (!send_frame(socket.get(), kOpHello, 0, 0, {})) {
        return;
    }
    while (receive_frame(socket.get(), header, body)) {
        if (header.op != kOpAllGather || static_cast<int>(header.rank) != rank) {
            return;
        }
        std::vector<std::byte> reply;
        {
            std::unique_lock lock(mutex_);
            Round& round = rounds_[header.sequence];
            if (round.parts.empty()) {
                round.parts.resize(config_.world_size);
            }
            round.parts[rank] = std::move(body);
            if (++round.received == config_.world_size) {
                changed_.notify_all();
            }
            changed_.wait(lock, [&] { return round.received == config_.world_size; });
            for (const auto& part : round.parts) {
                const std::uint64_t size = part.size();
                const auto* size_bytes = reinterpret_cast<const std::byte*>(&size);
                reply.insert(reply.end(), size_bytes, size_bytes + sizeof(size));
                reply.insert(reply.end(), part.begin(), part.end());
            }
            if (++round.delivered == config_.world_size) {
                rounds_.erase(header.sequence);
            }
        }
        if (!send_frame(socket.get(), kOpAllGather, 0, header.sequence, reply)) {
            return;
        }
        body.clear();
    }
}

void Server::wait_for_disconnects(std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (connections_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

} // namespace pkbw::engine::rendezvous_wire
