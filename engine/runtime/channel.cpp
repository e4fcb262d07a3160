#include "channel.h"

#include "pkbw/core/candidate_protocol.h"
#include "pkbw/core/error.h"

#include <cerrno>
#include <cstring>
#include <optional>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace pkbw::engine {

namespace cp = candidate_protocol;

std::pair<Channel, int> Channel::make_pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
        throw Error(std::string("socketpair for the candidate channel: ") + std::strerror(errno));
    }
    // Room for the largest message in flight (a view set of many input copies).
    const int size = static_cast<int>(cp::kMaxMessageBytes + 4096);
    for (int fd : fds) {
        ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    }
    return {Channel(fds[0]), fds[1]};
}

Channel& Channel::operator=(Channel&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_ = std::exchange(other.fd_, -1);
        closed_ = other.closed_;
        spin_polls_ = other.spin_polls_;
        buffer_ = std::move(other.buffer_);
    }
    return *this;
}

Channel::~Channel() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void Channel::send(const nlohmann::json& message, const std::vector<int>& fds) {
    const std::string text = message.dump();
    if (text.size() > cp::kMaxMessageBytes) {
        throw Error("candidate channel: a message of " + std::to_string(text.size()) + " bytes exceeds " +
                    std::to_string(cp::kMaxMessageBytes));
    }
    if (fds.size() > cp::kMaxFdsPerMessage) {
        throw Error("candidate channel: too many descriptors in one message");
    }
    iovec iov{const_cast<char*>(text.data()), text.size()};
    msghdr header{};
    header.msg_iov = &iov;
    header.msg_iovlen = 1;
    std::vector<char> control;
    if (!fds.empty()) {
        control.resize(CMSG_SPACE(sizeof(int) * fds.size()));
        header.msg_control = control.data();
        header.msg_controllen = control.size();
        cmsghdr* cmsg = CMSG_FIRSTHDR(&header);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t n;
    do {
        n = ::sendmsg(fd_, &header, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        closed_ = errno == EPIPE || errno == ECONNRESET;
        throw Error(std::string("candidate channel: send failed: ") + std::strerror(errno));
    }
}

long Channel::receive_once(msghdr& header, int flags) {
    ssize_t n;
    do {
        n = ::recvmsg(fd_, &header, MSG_CMSG_CLOEXEC | flags);
    } while (n < 0 && errno == EINTR);
    return static_cast<long>(n);
}

std::optional<nlohmann::json> Channel::receive(std::vector<int>* fds, int timeout_ms) {
    buffer_.resize(cp::kMaxMessageBytes + 1); // allocated and touched once, on the first message
    iovec iov{buffer_.data(), buffer_.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * cp::kMaxFdsPerMessage)];
    msghdr header{};
    header.msg_iov = &iov;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    long n = -1;
    bool waiting = true;
    for (int attempt = 0; attempt < spin_polls_ && waiting; ++attempt) {
        n = receive_once(header, MSG_DONTWAIT);
        waiting = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
    if (waiting) {
        if (timeout_ms >= 0) {
            pollfd p{fd_, POLLIN, 0};
            int ready;
            do {
                ready = ::poll(&p, 1, timeout_ms);
            } while (ready < 0 && errno == EINTR);
            if (ready == 0) {
                return std::nullopt;
            }
        }
        n = receive_once(header, 0);
    }
    if (n <= 0) {
        closed_ = true;
        return std::nullopt;
    }
    std::vector<int> received;
    for (cmsghdr* cmsg = CMSG_FIRSTHDR(&header); cmsg; cmsg = CMSG_NXTHDR(&header, cmsg)) {
        if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
            const std::size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            const auto* data = reinterpret_cast<const int*>(CMSG_DATA(cmsg));
            received.insert(received.end(), data, data + count);
        }
    }
    auto close_received = [&] {
        for (int fd : received) {
            ::close(fd);
        }
    };
    if ((header.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
        close_received();
        throw FormatError("candidate channel: a message over " + std::to_string(cp::kMaxMessageBytes) +
                          " bytes (or with too many descriptors) was truncated");
    }
    nlohmann::json message =
        nlohmann::json::parse(buffer_.data(), buffer_.data() + static_cast<std::size_t>(n), nullptr, false);
    if (!message.is_object() || !message.contains("msg") || !message["msg"].is_string()) {
        close_received();
        throw FormatError("candidate channel: a message that is not a JSON object with a string 'msg'");
    }
    if (fds) {
        fds->insert(fds->end(), received.begin(), received.end());
    } else {
        close_received();
    }
    return message;
}

} // namespace pkbw::engine
