// The judge <-> candidate channel (core/candidate_protocol.h): a SOCK_SEQPACKET socket pair, one
// JSON object per datagram, descriptors attached with SCM_RIGHTS. Each side owns its end.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

struct msghdr;

namespace pkbw::engine {

// How long a receive polls before it sleeps, where the ends poll (cpu_placement.h): about 0.1 s of
// non-blocking receives, longer than any block of microsecond calls and the judge's work between them.
inline constexpr int kChannelSpinPolls = 100000;

class Channel {
public:
    // A connected pair: [0] for this process, [1] for the child (CLOEXEC off only in the child).
    static std::pair<Channel, int> make_pair();
    explicit Channel(int fd = -1)
        : fd_(fd) {}
    Channel(Channel&& other) noexcept
        : fd_(std::exchange(other.fd_, -1))
        , closed_(other.closed_)
        , spin_polls_(other.spin_polls_)
        , buffer_(std::move(other.buffer_)) {}
    Channel& operator=(Channel&& other) noexcept;
    ~Channel();
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

    bool open() const { return fd_ >= 0; }
    int fd() const { return fd_; }

    // Throws pkbw::Error when the peer is gone.
    void send(const nlohmann::json& message, const std::vector<int>& fds = {});
    // Blocks until a message arrives; `timeout_ms` < 0 waits forever. Received descriptors are
    // appended to `fds` (the caller owns them). Returns nothing when the peer closed its end or the
    // timeout expired (`closed()` tells which); throws pkbw::FormatError on a malformed datagram.
    std::optional<nlohmann::json> receive(std::vector<int>* fds = nullptr, int timeout_ms = -1);
    bool closed() const { return closed_; }
    // Polls the socket up to `polls` times (each a non-blocking receive, about a microsecond) before a
    // receive sleeps on it (cpu_placement.h says when and why; 0: sleep at once). A frozen process
    // polls nothing, so a worker thawed for its block finds the request within a poll.
    void set_spin(int polls) { spin_polls_ = polls; }

private:
    // One recvmsg into buffer_ with `flags`; the byte count, or -1 with errno (EAGAIN: nothing yet).
    long receive_once(msghdr& header, int flags);

    int fd_ = -1;
    bool closed_ = false;
    int spin_polls_ = 0;
    // Every message is received into this one buffer, sized for the largest on the first receive and
    // reused: a fresh zero-filled 4 MiB buffer per message cost each end of every timed request
    // 0.1-0.4 ms, inside the judge's clock and different from one process to the next
    // (docs/perf.md "Replication, measured").
    std::vector<char> buffer_;
};

} // namespace pkbw::engine
