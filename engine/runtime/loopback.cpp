#include "loopback.h"

#include "pkbw/core/error.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace pkbw::engine {
namespace {
std::string to_hex(const std::string& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string text;
    for (unsigned char b : bytes) {
        text += digits[b >> 4];
        text += digits[b & 15];
    }
    return text;
}
} // namespace

LoopbackListener LoopbackListener::open(int backlog) {
    const int sock = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0) {
        throw Error(std::string("rendezvous listener: socket: ") + std::strerror(errno));
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    const char* failed = nullptr;
    if (::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        failed = "bind 127.0.0.1:0";
    } else if (::listen(sock, backlog) != 0) {
        failed = "listen";
    } else if (::getsockname(sock, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        failed = "getsockname";
    }
    if (failed != nullptr) {
        const int code = errno;
        ::close(sock);
        throw Error(std::string("rendezvous listener: ") + failed + ": " + std::strerror(code));
    }
    return LoopbackListener(sock, ntohs(address.sin_port));
}

LoopbackListener::LoopbackListener(LoopbackListener&& other) noexcept
    : fd_(other.fd_)
    , port_(other.port_) {
    other.fd_ = -1;
}

LoopbackListener& LoopbackListener::operator=(LoopbackListener&& other) noexcept {
    if (this != &other) {
        close();
        fd_ = other.fd_;
        port_ = other.port_;
        other.fd_ = -1;
    }
    return *this;
}

LoopbackListener::~LoopbackListener() {
    close();
}

void LoopbackListener::close() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
    fd_ = -1;
}

std::string random_hex_token() {
    const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    std::string bytes(16, '\0');
    const bool ok = fd >= 0 && ::read(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    if (fd >= 0) {
        ::close(fd);
    }
    if (!ok) {
        throw Error("cannot read /dev/urandom for the candidates' rendezvous token");
    }
    return to_hex(bytes);
}

} // namespace pkbw::engine
