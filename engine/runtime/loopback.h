// A rendezvous's two secrets-and-addresses, written once for the launcher (the judges' rendezvous)
// and the judges (the candidates' own): a listening loopback socket and a random token.
#pragma once

#include <string>

namespace pkbw::engine {

// A TCP socket on 127.0.0.1, bound to a port the kernel chose and already listening. It is handed
// to the rendezvous server (rank 0) as a descriptor, so the port is held from the moment it is
// chosen: a port that is picked, released and bound again later can be taken in between by
// another run's server, whose refusal then reads as "wrong token" (CI saw exactly that with two
// runs in parallel). Move-only; closes the socket unless released.
class LoopbackListener {
public:
    // Throws pkbw::Error naming the failing call.
    static LoopbackListener open(int backlog);
    LoopbackListener(LoopbackListener&& other) noexcept;
    LoopbackListener& operator=(LoopbackListener&& other) noexcept;
    LoopbackListener(const LoopbackListener&) = delete;
    LoopbackListener& operator=(const LoopbackListener&) = delete;
    ~LoopbackListener();

    int fd() const { return fd_; }
    int port() const { return port_; }
    void close();

private:
    LoopbackListener(int fd, int port)
        : fd_(fd)
        , port_(port) {}
    int fd_ = -1;
    int port_ = 0;
};

// 32 hex digits from /dev/urandom. Throws pkbw::Error.
std::string random_hex_token();

} // namespace pkbw::engine
