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

int free_loopback_port() {
    const int sock = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0) {
        throw Error(std::string("socket: ") + std::strerror(errno));
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    const bool ok = ::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                    ::getsockname(sock, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    ::close(sock);
    if (!ok) {
        throw Error(std::string("cannot bind a loopback port for the candidates' rendezvous: ") +
                    std::strerror(errno));
    }
    return ntohs(address.sin_port);
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
