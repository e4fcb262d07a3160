#include "rendezvous.h"

#include "pkbw/core/error.h"
#include "pkbw/core/rank_environment.h"

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <thread>
#include <unistd.h>

namespace pkbw::engine {
namespace {

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

// 0 clears it (blocking receives, as the collectives need).
void set_receive_timeout(int fd, double seconds) {
    timeval limit{};
    limit.tv_sec = static_cast<time_t>(seconds);
    limit.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(limit.tv_sec)) * 1e6);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
}

bool connected_to_itself(int fd) {
    sockaddr_in local{}, peer{};
    socklen_t local_length = sizeof(local), peer_length = sizeof(peer);
    return ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) == 0 &&
           ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) == 0 &&
           local.sin_port == peer.sin_port && local.sin_addr.s_addr == peer.sin_addr.s_addr;
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

// Rank 0's server: one thread per connected rank; all-gathers complete when every rank contributed.
class Server {
public:
    Server(const RendezvousConfig& config)
        : config_(config) {
        if (config.listen_fd >= 0) {
            adopt_listener(config);
        } else {
            bind_listener(config);
        }
        // The server lives as long as rank 0's process; threads are detached and end with it.
        std::thread([this] { accept_loop(); }).detach();
    }

private:
    // The launcher chose the port and kept it bound: nobody else can have taken it. The socket must
    // be what the environment says it is (a listening socket on `port`), or the ranks would wait for
    // a server that never answers.
    void adopt_listener(const RendezvousConfig& config) {
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

    void bind_listener(const RendezvousConfig& config) {
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

    struct Round {
        std::vector<std::vector<std::byte>> parts;
        int received = 0;
        int delivered = 0;
    };

    void accept_loop() {
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

    void serve(Socket socket) {
        const int one = 1;
        ::setsockopt(socket.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        FrameHeader header{};
        std::vector<std::byte> body;
        // The first frame must be a hello carrying the token; anything else is dropped silently.
        if (!receive_frame(socket.get(), header, body) || header.op != kOpHello ||
            !tokens_equal(body, config_.token) ||
            header.rank >= static_cast<std::uint32_t>(config_.world_size)) {
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

public:
    // Waits until no client is connected, or `timeout` passes.
    void wait_for_disconnects(std::chrono::milliseconds timeout) const {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (connections_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }

private:
    RendezvousConfig config_;
    std::atomic<int> connections_{0};
    Socket listener_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::map<std::uint64_t, Round> rounds_;
};

class TcpRendezvous final : public Rendezvous {
public:
    TcpRendezvous(const RendezvousConfig& config)
        : Rendezvous(config.rank, config.world_size) {
        if (config.rank == 0) {
            // Deliberately never deleted: its detached connection threads use it until the process
            // exits, and rank 0 may leave its last collective before the others have read theirs.
            server_ = new Server(config);
        }
        connect(config);
    }

    ~TcpRendezvous() override {
        socket_.reset();
        if (server_ != nullptr) {
            // Peers hang up after reading their last reply (or when their process ends).
            server_->wait_for_disconnects(std::chrono::seconds(10));
        }
    }

    std::vector<std::vector<std::byte>> all_gather(std::span<const std::byte> mine) override {
        if (world_size() == 1) {
            // Nobody to meet: a round trip through rank 0's server thread would only add its wake-up
            // to whatever the caller times (a block's barriers are inside the judge's clock).
            return {std::vector<std::byte>(mine.begin(), mine.end())};
        }
        const std::uint64_t sequence = next_sequence_++;
        FrameHeader header{};
        std::vector<std::byte> body;
        if (!send_frame(socket_.get(), kOpAllGather, static_cast<std::uint32_t>(rank()), sequence, mine) ||
            !receive_frame(socket_.get(), header, body) || header.sequence != sequence) {
            throw Error("rendezvous: lost the connection to rank 0's server (did rank 0 exit?)");
        }
        std::vector<std::vector<std::byte>> parts;
        std::size_t offset = 0;
        for (int r = 0; r < world_size(); ++r) {
            std::uint64_t size = 0;
            if (offset + sizeof(size) > body.size()) {
                throw Error("rendezvous: truncated all-gather reply");
            }
            std::memcpy(&size, body.data() + offset, sizeof(size));
            offset += sizeof(size);
            if (size > body.size() - offset) {
                throw Error("rendezvous: truncated all-gather reply");
            }
            parts.emplace_back(body.begin() + static_cast<std::ptrdiff_t>(offset),
                               body.begin() + static_cast<std::ptrdiff_t>(offset + size));
            offset += size;
        }
        return parts;
    }

private:
    void connect(const RendezvousConfig& config) {
        const sockaddr_in addr = make_address(config.address, config.port);
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::duration<double>(config.connect_timeout_s);
        std::string last_error;
        for (;;) {
            Socket socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
            const bool connected =
                ::connect(socket.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
            if (connected && connected_to_itself(socket.get())) {
                // While nothing listens on a port of the ephemeral range, the kernel may give the
                // connecting socket that same port: TCP's simultaneous open joins it to itself, and
                // it would read its own hello back. Nothing listens yet: retry.
                errno = ECONNREFUSED;
            } else if (connected) {
                const int one = 1;
                ::setsockopt(socket.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                const auto token = std::as_bytes(std::span(config.token.data(), config.token.size()));
                FrameHeader header{};
                std::vector<std::byte> body;
                // A listening socket accepts connections before rank 0's server runs (the launcher
                // holds it from the start): the wait for the server's answer keeps the deadline.
                set_receive_timeout(
                    socket.get(),
                    std::max(
                        1.0,
                        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count()));
                const bool sent =
                    send_frame(socket.get(), kOpHello, static_cast<std::uint32_t>(config.rank), 0, token);
                const bool answered = sent && receive_frame(socket.get(), header, body);
                const int receive_error = errno;
                if (answered && header.op == kOpHello) {
                    set_receive_timeout(socket.get(), 0);
                    socket_ = std::move(socket);
                    return;
                }
                if (sent && !answered && (receive_error == EAGAIN || receive_error == EWOULDBLOCK)) {
                    throw RendezvousError("rendezvous: rank 0's server at " + config.address + ":" +
                                          std::to_string(config.port) + " did not answer rank " +
                                          std::to_string(config.rank) + " within " +
                                          std::to_string(static_cast<int>(config.connect_timeout_s)) + " s");
                }
                throw RendezvousError("rendezvous: " + config.address + ":" + std::to_string(config.port) +
                                      " refused rank " + std::to_string(config.rank) +
                                      " (wrong token or rank)");
            }
            last_error = std::strerror(errno);
            if (std::chrono::steady_clock::now() > deadline) {
                throw RendezvousError("rendezvous: cannot reach rank 0 at " + config.address + ":" +
                                      std::to_string(config.port) + ": " + last_error);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }

    Server* server_ = nullptr;
    Socket socket_;
    std::uint64_t next_sequence_ = 1;
};

int env_int(const char* name, int fallback) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') {
        return fallback;
    }
    char* end = nullptr;
    const long parsed = std::strtol(value, &end, 10);
    if (*end != '\0') {
        throw Error(std::string("environment variable ") + name + "='" + value + "' is not an integer");
    }
    return static_cast<int>(parsed);
}

} // namespace

std::unique_ptr<Rendezvous> Rendezvous::join(const RendezvousConfig& config) {
    if (config.world_size < 1 || config.rank < 0 || config.rank >= config.world_size) {
        throw Error("rendezvous: rank " + std::to_string(config.rank) + " is outside world size " +
                    std::to_string(config.world_size));
    }
    return std::make_unique<TcpRendezvous>(config);
}

std::vector<std::byte> Rendezvous::all_gather_concat(std::span<const std::byte> mine) {
    std::vector<std::byte> all;
    for (const auto& part : all_gather(mine)) {
        if (part.size() != mine.size()) {
            throw Error("rendezvous: ranks contributed different sizes to an all-gather");
        }
        all.insert(all.end(), part.begin(), part.end());
    }
    return all;
}

void Rendezvous::barrier() {
    all_gather({});
}

RendezvousConfig rendezvous_config_from_env() {
    RendezvousConfig config;
    config.rank = env_int("RANK", -1);
    config.world_size = env_int("WORLD_SIZE", -1);
    if (config.rank < 0 || config.world_size < 1) {
        throw Error(
            "RANK and WORLD_SIZE must be set (pkbw sets them; so do torchrun, and mpirun/srun wrappers)");
    }
    if (const char* address = std::getenv("MASTER_ADDR"); address && *address) {
        config.address = address;
        if (config.address == "localhost") {
            config.address = "127.0.0.1";
        }
    }
    int port = env_int(rank_environment::kEnvRendezvousPort.data(), 0);
    if (port == 0) {
        port = env_int("MASTER_PORT", 0);
        // Under torchrun the elastic agent's store owns MASTER_PORT.
        if (port != 0 && std::getenv("TORCHELASTIC_RUN_ID") != nullptr) {
            port += 1;
        }
    }
    if (port <= 0 || port > 65535) {
        throw Error("set MASTER_PORT (or PKBW_RDZV_PORT) to the rendezvous port");
    }
    config.port = port;
    if (const int fd = env_int(rank_environment::kEnvRendezvousListenFd.data(), -1); fd >= 0 && config.rank == 0) {
        // Not passed on: the candidate process and anything else rank 0 starts stay off it.
        if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
            throw Error("PKBW_RDZV_LISTEN_FD=" + std::to_string(fd) +
                        " is not an open descriptor: " + std::strerror(errno));
        }
        config.listen_fd = fd;
    }
    if (const char* token = std::getenv(rank_environment::kEnvRendezvousToken.data()); token && *token) {
        config.token = token;
    } else {
        // Launched by hand or by another launcher: all ranks share the job's identity instead.
        const char* job = std::getenv("TORCHELASTIC_RUN_ID");
        config.token = std::string("pkbw-") + (job ? job : "manual");
    }
    return config;
}

} // namespace pkbw::engine
