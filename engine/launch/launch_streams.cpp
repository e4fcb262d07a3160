// A rank's three pipes as the launcher reads them: control lines parsed into events (the phase and
// deadline they start, the observer's on_event), stdout and stderr copied into the rank's log (up to
// max_log_bytes), its stderr tail and the observer's on_log (up to max_forwarded_log_lines).
#include "launch_rank.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/status.h"

#include <algorithm>
#include <cerrno>
#include <unistd.h>

namespace pkbw::cli::launch {
namespace {

constexpr std::size_t kTailBytes = 16 << 10;
constexpr std::size_t kMaxLogLine = 4096;

void write_log(Rank& rank, const LaunchSpec& spec, std::string_view bytes) {
    if (!rank.log)
        return;
    if (rank.report.log_bytes >= spec.max_log_bytes)
        return;
    std::size_t room = spec.max_log_bytes - rank.report.log_bytes;
    std::string_view part = bytes.substr(0, std::min(room, bytes.size()));
    while (!part.empty()) {
        ssize_t n = ::write(rank.log.get(), part.data(), part.size());
        if (n <= 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        part.remove_prefix(static_cast<std::size_t>(n));
    }
    rank.report.log_bytes += std::min(room, bytes.size());
    if (rank.report.log_bytes >= spec.max_log_bytes) {
        std::string note = "\n[pkbw] log truncated at " + std::to_string(spec.max_log_bytes) + " bytes\n";
        [[maybe_unused]] auto n = ::write(rank.log.get(), note.data(), note.size());
    }
}

void handle_control_line(Rank& rank, const LaunchSpec& spec, std::string_view line,
                         LaunchObserver& observer) {
    if (line.empty())
        return;
    protocol::Message message;
    try {
        message = protocol::parse_line(line, "rank " + std::to_string(rank.report.rank) + " control pipe");
    } catch (const std::exception& error) {
        ++rank.report.malformed_lines;
        write_log(rank, spec, std::string("[pkbw] malformed control line: ") + error.what() + "\n");
        return;
    }
    const auto& body = message.body;
    if (message.event == protocol::kHello) {
        rank.report.hello = true;
        set_phase(rank, spec, status::kPhaseStart);
    } else if (message.event == protocol::kPhase) {
        rank.report.trial = body.value("trial", rank.report.trial);
        set_phase(rank, spec, body.value("phase", std::string("unknown")));
    } else if (message.event == protocol::kError) {
        rank.report.last_error =
            body.value("kind", std::string()) + ": " + body.value("message", std::string());
    } else if (message.event == protocol::kRankDone) {
        rank.report.done = true;
        set_phase(rank, spec, "exit");
    }
    observer.on_event(rank.report.rank, message);
}

void forward_lines(Rank& rank, const LaunchSpec& spec, std::string& partial, std::string_view data,
                   std::string_view stream, LaunchObserver& observer, bool flush) {
    while (!data.empty() || flush) {
        std::size_t newline = data.find('\n');
        if (newline == std::string_view::npos) {
            if (partial.size() < kMaxLogLine)
                partial.append(data.substr(0, kMaxLogLine - partial.size()));
            if (!flush || partial.empty())
                return;
        } else if (partial.size() < kMaxLogLine) {
            partial.append(data.substr(0, std::min(newline, kMaxLogLine - partial.size())));
        }
        if (rank.forwarded_lines < spec.max_forwarded_log_lines)
            observer.on_log(rank.report.rank, stream, partial);
        else if (rank.forwarded_lines == spec.max_forwarded_log_lines)
            observer.on_log(rank.report.rank, "pkbw",
                            "further output only in " + rank.report.log_path.string());
        ++rank.forwarded_lines;
        partial.clear();
        if (newline == std::string_view::npos)
            return;
        data.remove_prefix(newline + 1);
    }
}

} // namespace

bool read_control(Rank& rank, const LaunchSpec& spec, LaunchObserver& observer) {
    char buffer[65536];
    ssize_t n = ::read(rank.control.get(), buffer, sizeof buffer);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        if (!rank.control_buffer.empty() && !rank.control_overflow)
            handle_control_line(rank, spec, rank.control_buffer, observer);
        rank.control_buffer.clear();
        rank.control.reset();
        return false;
    }
    if (n < 0)
        return errno == EINTR;
    std::string_view data(buffer, static_cast<std::size_t>(n));
    while (!data.empty()) {
        std::size_t newline = data.find('\n');
        std::string_view piece = data.substr(0, newline);
        if (!rank.control_overflow) {
            rank.control_buffer.append(piece);
            if (rank.control_buffer.size() > protocol::kMaxLineBytes) {
                rank.control_overflow = true;
                rank.control_buffer.clear();
                rank.control_buffer.shrink_to_fit();
            }
        }
        if (newline == std::string_view::npos)
            break;
        if (rank.control_overflow) {
            ++rank.report.malformed_lines;
            write_log(rank, spec, "[pkbw] control line longer than the protocol's limit dropped\n");
            rank.control_overflow = false;
        } else {
            handle_control_line(rank, spec, rank.control_buffer, observer);
        }
        rank.control_buffer.clear();
        data.remove_prefix(newline + 1);
    }
    return true;
}

void read_output(Rank& rank, UniqueFd& fd, bool is_stderr, const LaunchSpec& spec, LaunchObserver& observer) {
    char buffer[65536];
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    std::string& partial = is_stderr ? rank.err_line : rank.out_line;
    std::string_view stream = is_stderr ? "stderr" : "stdout";
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        forward_lines(rank, spec, partial, {}, stream, observer, true);
        fd.reset();
        return;
    }
    if (n < 0)
        return;
    std::string_view data(buffer, static_cast<std::size_t>(n));
    write_log(rank, spec, data);
    if (is_stderr) {
        std::string& tail = rank.report.stderr_tail;
        tail.append(data);
        if (tail.size() > 2 * kTailBytes)
            tail.erase(0, tail.size() - kTailBytes);
    }
    forward_lines(rank, spec, partial, data, stream, observer, false);
}

} // namespace pkbw::cli::launch
