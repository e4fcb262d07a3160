// The ranks' side of the rendezvous: each rank's connection to rank 0's server (rendezvous_server.cpp)
// and its collectives over it, and the configuration read from the environment.
#include "rendezvous.h"

#include "pkbw/core/error.h"
#include "pkbw/core/rank_environment.h"
#include "rendezvous_wire.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <thread>

namespace pkbw::engine {
namespace {

using namespace rendezvous_wire;

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
    if (const int fd = env_int(rank_environment::kEnvRendezvousListenFd.data(), -1);
        fd >= 0 && config.rank == 0) {
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
