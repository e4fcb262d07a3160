#include "launcher.h"

#include "containment.h"
#include "fd.h"
#include "loopback.h"
#include "pkbw/core/error.h"
#include "sandbox.h"
#include "signals.h"
#include "subprocess.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace pkbw::cli {
namespace {

constexpr int kControlFd = 3;
constexpr int kRendezvousListenFd = 4; // rank 0 only: PKBW_RDZV_LISTEN_FD
constexpr std::size_t kTailBytes = 16 << 10;
constexpr std::size_t kMaxLogLine = 4096;

double since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// One rank's process and pipes. The destructor kills and reaps it if it is still running.
struct Rank {
    RankReport report;
    UniqueFd out, err, control, log;
    std::string control_buffer, out_line, err_line;
    bool control_overflow = false;
    std::size_t forwarded_lines = 0;
    Clock::time_point deadline;
    double deadline_seconds = 0;

    Rank() = default;
    Rank(const Rank&) = delete;
    Rank(Rank&&) = default;
    ~Rank() {
        if (report.pid > 0 && !report.exited) {
            ::kill(report.pid, SIGKILL);
            ::waitpid(report.pid, nullptr, 0);
        }
    }
    bool running() const { return report.pid > 0 && !report.exited; }
};

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

void set_phase(Rank& rank, const LaunchSpec& spec, const std::string& phase) {
    rank.report.phase = phase;
    rank.deadline_seconds = spec.timeouts.for_phase(phase);
    rank.deadline =
        Clock::now() + std::chrono::milliseconds(static_cast<std::int64_t>(rank.deadline_seconds * 1000));
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
        set_phase(rank, spec, "start");
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

// Reads what the control pipe holds; returns false when nothing more can be read now (empty pipe,
// or end of file: then the pipe is closed).
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

std::string describe_exit(const RankReport& report) {
    std::string text = "rank " + std::to_string(report.rank);
    if (report.signal != 0)
        text += " crashed with " + signal_name(report.signal);
    else if (report.exit_code == 0 && !report.done)
        text += " exited with code 0 before finishing (the solution ended the process)";
    else
        text += " exited with code " + std::to_string(report.exit_code);
    text += " in phase " + report.phase;
    if (report.trial >= 0)
        text += " (trial " + std::to_string(report.trial) + ")";
    if (!report.last_error.empty())
        text += ": " + report.last_error;
    std::string tail = report.last_lines(5);
    if (!tail.empty())
        text += "; last stderr:\n" + tail;
    return text;
}

LaunchEnd classify_exit(const RankReport& report) {
    if (report.signal != 0)
        return LaunchEnd::Crash;
    if (report.exit_code == 3)
        return LaunchEnd::EnvironmentError;
    if (report.exit_code == 5)
        return LaunchEnd::InternalError;
    return LaunchEnd::Crash;
}

struct Spawned {
    pid_t pid = -1;
    std::string exec_error;
};

// `listener` >= 0: the rendezvous socket, passed as kRendezvousListenFd.
Spawned spawn_rank(const LaunchSpec& spec, int rank, pid_t group, const std::vector<std::string>& env,
                   Pipe& out, Pipe& err, Pipe& control, int listener) {
    std::vector<std::string> argv_storage{spec.program.string()};
    argv_storage.insert(argv_storage.end(), spec.args.begin(), spec.args.end());
    std::vector<char*> argv, envp;
    for (auto& a : argv_storage)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    for (const auto& e : env)
        envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    Pipe exec_status = make_pipe("rank " + std::to_string(rank) + " exec status");
    pid_t parent = ::getpid();

    pid_t pid = ::fork();
    if (pid < 0)
        return {-1, std::string("fork failed: ") + std::strerror(errno)};
    if (pid == 0) {
        // Only async-signal-safe calls from here to exec.
        ::setpgid(0, group);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL); // pkbw killed outright must not leave ranks behind
        if (::getppid() != parent)
            ::_exit(126);
        if (spec.address_space_limit > 0) {
            const rlimit limit{spec.address_space_limit, spec.address_space_limit};
            ::setrlimit(RLIMIT_AS, &limit);
        }
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::signal(SIGPIPE, SIG_DFL);
        int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            ::dup2(devnull, 0);
        ::dup2(out.write.get(), 1);
        ::dup2(err.write.get(), 2);
        // The listener first, in case it sits on the control pipe's number (a dup2 over it would
        // close it); neither can be on kRendezvousListenFd's number once moved high.
        const int held = listener >= 0 ? ::fcntl(listener, F_DUPFD_CLOEXEC, 64) : -1;
        if (control.write.get() == kControlFd)
            ::fcntl(kControlFd, F_SETFD, 0);
        else
            ::dup2(control.write.get(), kControlFd);
        if (held >= 0)
            ::dup2(held, kRendezvousListenFd); // dup2's copy is inherited across exec
        ::execve(argv[0], argv.data(), envp.data());
        int code = errno;
        [[maybe_unused]] auto n = ::write(exec_status.write.get(), &code, sizeof code);
        ::_exit(127);
    }
    ::setpgid(pid, group == 0 ? pid : group);
    exec_status.write.reset();
    int code = 0;
    ssize_t n;
    do {
        n = ::read(exec_status.read.get(), &code, sizeof code);
    } while (n < 0 && errno == EINTR);
    if (n == sizeof code) {
        ::waitpid(pid, nullptr, 0);
        return {-1, "cannot start " + spec.program.string() + ": " + std::strerror(code)};
    }
    return {pid, {}};
}

} // namespace

PhaseTimeouts PhaseTimeouts::defaults() {
    PhaseTimeouts t;
    t.seconds = {{"start", 60},     {"rendezvous", 120}, {"inputs", 60},   {"reference", 120},
                 {"candidate", 60}, {"compare", 60},     {"perf", 600},    {"trace", 300},
                 {"teardown", 30},  {"exit", 30},        {"compile", 300}, {"default", 120}};
    return t;
}

const std::vector<std::string>& PhaseTimeouts::phase_names() {
    static const std::vector<std::string> names{"start",     "compile", "rendezvous", "inputs", "reference",
                                                "candidate", "compare", "perf",       "trace",  "teardown"};
    return names;
}

double PhaseTimeouts::for_phase(const std::string& phase) const {
    auto found = seconds.find(phase);
    if (found != seconds.end())
        return found->second;
    found = seconds.find("default");
    return found != seconds.end() ? found->second : 120;
}

void PhaseTimeouts::fit_inputs(std::uint64_t bytes) {
    // A rank's inputs are drawn on its host threads: about 200 MB a second at the least (the plain
    // normal draw, 30 ns a 2-byte value, on 8 threads). Problem 68 at PKB's size draws a 57 GB table
    // at W = 1, which outran the 60 s default on a 16-core H200 host.
    constexpr double kDrawnBytesPerSecond = 200e6;
    if (asked.count("inputs") == 0) {
        seconds["inputs"] = for_phase("inputs") + static_cast<double>(bytes) / kDrawnBytesPerSecond;
    }
}

void PhaseTimeouts::scale(double factor) {
    for (auto& [phase, value] : seconds)
        value *= factor;
}

std::string RankReport::last_lines(int lines) const {
    std::string_view tail = stderr_tail;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r'))
        tail.remove_suffix(1);
    std::size_t begin = tail.size();
    for (int i = 0; i < lines && begin > 0; ++i) {
        std::size_t newline = tail.rfind('\n', begin - 1);
        begin = newline == std::string_view::npos ? 0 : newline;
        if (newline == std::string_view::npos)
            break;
    }
    if (begin < tail.size() && tail[begin] == '\n')
        ++begin;
    return std::string(tail.substr(begin));
}

std::string_view launch_end_name(LaunchEnd end) {
    switch (end) {
    case LaunchEnd::Completed:
        return "completed";
    case LaunchEnd::Timeout:
        return "timeout";
    case LaunchEnd::Crash:
        return "crash";
    case LaunchEnd::EnvironmentError:
        return "environment_error";
    case LaunchEnd::InternalError:
        return "internal_error";
    case LaunchEnd::Interrupted:
        return "interrupted";
    case LaunchEnd::SpawnFailed:
        return "spawn_failed";
    }
    return "unknown";
}

LaunchOutcome launch_ranks(const LaunchSpec& spec, LaunchObserver& observer) {
    auto start = Clock::now();
    // Orphans of the ranks' processes are re-parented to pkbw, which kills them at the end.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    // The read ends of every rank's control pipe are pkbw's descriptors: a process of the same user
    // could open them through /proc/<pid>/fd and write forged events. Not dumpable, /proc/<pid>/fd
    // and mem are closed to processes without CAP_SYS_PTRACE (the native candidate's Landlock domain
    // closes them even to root; a PKB Python candidate run as root is not covered: docs/pkb-interop.md).
    ::prctl(PR_SET_DUMPABLE, 0);
    LaunchOutcome outcome;
    outcome.token = random_token();
    // Segment names carry a tag of their own, not the token: a candidate's segments are named after the
    // run too, and must tell it nothing of the judges' token.
    outcome.segment_tag = random_token().substr(0, 16);
    // Held until rank 0 has it (spawn_rank), so the port cannot be taken in between.
    std::optional<engine::LoopbackListener> listener(engine::LoopbackListener::open(spec.world_size + 8));
    outcome.port = listener->port();
    std::vector<Rank> ranks(static_cast<std::size_t>(spec.world_size));

    std::map<std::string, std::string> common = spec.extra_env;
    common["WORLD_SIZE"] = std::to_string(spec.world_size);
    common["MASTER_ADDR"] = "127.0.0.1";
    common["MASTER_PORT"] = std::to_string(outcome.port);
    common["PKBW_RDZV_PORT"] = std::to_string(outcome.port);
    common["PKBW_RDZV_TOKEN"] = outcome.token;
    common["PKBW_CONTROL_FD"] = std::to_string(kControlFd);
    common["PKBW_LAUNCHER_PID"] = std::to_string(::getpid());
    common["PKBW_SEGMENT_TAG"] = outcome.segment_tag;
    if (spec.cuda && !std::getenv("NCCL_NVLS_ENABLE"))
        common["NCCL_NVLS_ENABLE"] = "0";

    pid_t group = 0;
    bool killing = false;
    Clock::time_point kill_time{};
    auto kill_all = [&] {
        if (group > 0)
            ::kill(-group, SIGKILL);
        for (auto& rank : ranks) {
            if (rank.running())
                ::kill(rank.report.pid, SIGKILL); // a rank that left the group
        }
        if (!killing)
            kill_time = Clock::now();
        killing = true;
    };
    auto fail = [&](LaunchEnd end, std::string message, std::vector<int> culprits) {
        if (killing)
            return;
        outcome.end = end;
        outcome.message = std::move(message);
        outcome.culprit_ranks = std::move(culprits);
        kill_all();
    };

    for (int r = 0; r < spec.world_size && !killing; ++r) {
        Rank& rank = ranks[static_cast<std::size_t>(r)];
        rank.report.rank = r;
        rank.report.log_path = spec.run_dir / ("rank_" + std::to_string(r) + ".log");
        rank.log =
            UniqueFd(::open(rank.report.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        Pipe out = make_pipe("rank " + std::to_string(r) + " stdout");
        Pipe err = make_pipe("rank " + std::to_string(r) + " stderr");
        Pipe control = make_pipe("rank " + std::to_string(r) + " control");
        auto env_map = common;
        env_map["RANK"] = std::to_string(r);
        env_map["LOCAL_RANK"] = std::to_string(r);
        const bool gets_listener = r == 0 && spec.rank0_inherits_listener;
        if (gets_listener)
            env_map["PKBW_RDZV_LISTEN_FD"] = std::to_string(kRendezvousListenFd);
        auto env = current_environment({"TORCHELASTIC_RUN_ID", "PKBW_RDZV_LISTEN_FD"}, env_map);
        Spawned spawned =
            spawn_rank(spec, r, group, env, out, err, control, gets_listener ? listener->fd() : -1);
        // Rank 0 holds it now (or, for a rank program that binds MASTER_PORT itself, it must be free).
        listener.reset();
        if (spawned.pid < 0) {
            fail(LaunchEnd::SpawnFailed, "rank " + std::to_string(r) + ": " + spawned.exec_error, {r});
            break;
        }
        if (group == 0)
            group = spawned.pid;
        rank.report.pid = spawned.pid;
        rank.out = std::move(out.read);
        rank.err = std::move(err.read);
        rank.control = std::move(control.read);
        for (int fd : {rank.out.get(), rank.err.get(), rank.control.get()})
            set_nonblocking(fd);
        set_phase(rank, spec, "start");
    }

    std::optional<Clock::time_point> all_exited;
    std::vector<pollfd> fds;
    while (true) {
        if (!killing && interrupt_signal() != 0)
            fail(LaunchEnd::Interrupted, "interrupted by " + signal_name(interrupt_signal()), {});
        // Reap every child that ended (cheap, and robust to coalesced SIGCHLDs).
        std::vector<int> failed;
        for (auto& rank : ranks) {
            if (!rank.running())
                continue;
            int status = 0;
            pid_t got = ::waitpid(rank.report.pid, &status, WNOHANG);
            if (got != rank.report.pid)
                continue;
            RankReport& report = rank.report;
            report.exited = true;
            if (WIFEXITED(status))
                report.exit_code = WEXITSTATUS(status);
            else if (WIFSIGNALED(status))
                report.signal = WTERMSIG(status);
            report.killed = killing && report.signal == SIGKILL;
            // Its last events (results, rank_done, error) may still be in the pipe: read them before
            // judging, also when it was killed because a peer failed (what it reported before stays
            // reported). An empty pipe that is not at its end means a grandchild holds it open; one
            // that keeps writing is not waited for past a pipe buffer's worth of reads.
            for (int reads = 0; rank.control && reads < 64 && read_control(rank, spec, observer); ++reads) {
            }
            observer.on_rank_exit(report);
            if (!killing && (report.signal != 0 || report.exit_code != 0 || !report.done))
                failed.push_back(report.rank);
        }
        // Several ranks seen dead at once: the one that caused it is named, not a peer that failed
        // because it vanished (a lost rendezvous connection exits with code 5).
        // A rank ended by SIGTERM or SIGINT while this launcher was not killing: scancel and a
        // terminal's Ctrl-C signal every process of the job or group at once, and the rank may be seen
        // dead before this process's own handler has run. Give the handler a moment; if the interrupt
        // arrives, the run was interrupted, not crashed (a sweep then leaves the pair to its resume).
        if (!failed.empty() && interrupt_signal() == 0 &&
            std::any_of(failed.begin(), failed.end(), [&](int r) {
                const int sig = ranks[static_cast<std::size_t>(r)].report.signal;
                return sig == SIGTERM || sig == SIGINT;
            }))
            await_interrupt(std::chrono::milliseconds(500));
        if (!failed.empty() && interrupt_signal() != 0) {
            fail(LaunchEnd::Interrupted, "interrupted by " + signal_name(interrupt_signal()), {});
            failed.clear();
        }
        if (!failed.empty()) {
            const auto severity = [&](int r) {
                const RankReport& report = ranks[static_cast<std::size_t>(r)].report;
                return report.signal != 0 ? 0 : report.exit_code == 0 ? 1 : report.exit_code == 4 ? 2 : 3;
            };
            std::stable_sort(failed.begin(), failed.end(),
                             [&](int a, int b) { return severity(a) < severity(b); });
            fail(classify_exit(ranks[static_cast<std::size_t>(failed[0])].report), {},
                 {failed[0]}); // message composed at the end: pipes first
        }
        auto now = Clock::now();
        if (!killing) {
            std::vector<int> expired;
            for (auto& rank : ranks) {
                if (rank.running() && now >= rank.deadline)
                    expired.push_back(rank.report.rank);
            }
            if (!expired.empty()) {
                std::string message;
                for (int r : expired) {
                    const Rank& rank = ranks[static_cast<std::size_t>(r)];
                    message += (message.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) +
                               " timed out in phase " + rank.report.phase;
                    if (rank.report.trial >= 0)
                        message += " (trial " + std::to_string(rank.report.trial) + ")";
                    message += " after " + std::to_string(static_cast<int>(rank.deadline_seconds)) + " s";
                }
                std::string others;
                for (auto& rank : ranks) {
                    if (rank.running() && now < rank.deadline)
                        others += (others.empty() ? "" : ", ") + std::string("rank ") +
                                  std::to_string(rank.report.rank) + " in " + rank.report.phase;
                }
                if (!others.empty())
                    message += " (still running: " + others + ")";
                fail(LaunchEnd::Timeout, message, expired);
            }
        }
        bool any_running = false;
        for (auto& rank : ranks)
            any_running = any_running || rank.running();
        if (!any_running && !all_exited)
            all_exited = now;

        fds.clear();
        std::vector<std::pair<Rank*, int>> owners; // which rank and which stream each pollfd is
        if (signal_pipe_fd() >= 0) {
            fds.push_back({signal_pipe_fd(), POLLIN, 0});
            owners.push_back({nullptr, -1});
        }
        for (auto& rank : ranks) {
            UniqueFd* streams[3] = {&rank.control, &rank.out, &rank.err};
            for (int s = 0; s < 3; ++s) {
                if (*streams[s]) {
                    fds.push_back({streams[s]->get(), POLLIN, 0});
                    owners.push_back({&rank, s});
                }
            }
        }
        bool pipes_open = owners.size() > (signal_pipe_fd() >= 0 ? 1u : 0u);
        // Ranks gone: finish reading; a grandchild outside the group holding a pipe is not waited for.
        if (all_exited && (!pipes_open || since(*all_exited) > 2.0))
            break;
        if (killing && since(kill_time) > 20.0)
            break; // unkillable (D state): the Rank destructors still try to reap

        int wait_ms = 250;
        for (auto& rank : ranks) {
            if (rank.running() && !killing) {
                auto left =
                    std::chrono::duration_cast<std::chrono::milliseconds>(rank.deadline - now).count();
                wait_ms = static_cast<int>(std::clamp<std::int64_t>(left + 1, 0, wait_ms));
            }
        }
        observer.on_wait();
        int n = ::poll(fds.data(), fds.size(), wait_ms);
        if (n < 0 && errno != EINTR)
            throw Error(std::string("poll failed in the launcher: ") + std::strerror(errno));
        for (std::size_t i = 0; n > 0 && i < fds.size(); ++i) {
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            auto [rank, stream] = owners[i];
            if (!rank)
                drain_signal_pipe();
            else if (stream == 0)
                read_control(*rank, spec, observer);
            else
                read_output(*rank, stream == 1 ? rank->out : rank->err, stream == 2, spec, observer);
        }
    }

    kill_all(); // stragglers of the group (grandchildren) too
    for (auto& rank : ranks) {
        if (rank.running()) {
            int status = 0;
            if (::waitpid(rank.report.pid, &status, 0) == rank.report.pid) {
                rank.report.exited = true;
                rank.report.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
                rank.report.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
                rank.report.killed = true;
            }
        }
        outcome.ranks.push_back(rank.report);
    }
    if (outcome.message.empty() && !outcome.culprit_ranks.empty())
        outcome.message = describe_exit(outcome.ranks[static_cast<std::size_t>(outcome.culprit_ranks[0])]);
    // A judge that was killed cannot kill what its candidate started: its candidate's container is left
    // (killed here as a whole, then removed), and those processes are re-parented here, to be found.
    std::vector<pid_t> judges;
    for (const auto& rank : ranks)
        judges.push_back(rank.report.pid);
    auto left = engine::ProcessContainer::reclaim_orphans(judges);
    std::vector<pid_t> groups; // killed whole, none of their processes seen (a fast forker's)
    for (auto& process : engine::kill_descendants(::getpid(), &groups))
        left.push_back(std::move(process));
    for (const auto& process : left)
        outcome.leftovers.push_back("pid " + std::to_string(process.pid) + " (" +
                                    process.command.substr(0, 200) + ")");
    for (const pid_t group : groups)
        outcome.leftovers.push_back("process group " + std::to_string(group));
    outcome.shm_segments_removed = remove_shm_segments(outcome.segment_tag);
    // Every judge has ended: a candidate's directory still there is left over. A judge killed (by this
    // launcher, for memory) or ending on a path that runs no destructor leaves its candidate's; on a
    // loaded host that happened to one that ended on its own (the background-thread case in CI).
    remove_candidate_directories(std::vector<int>(judges.begin(), judges.end()),
                                 std::filesystem::temp_directory_path());
    outcome.seconds = since(start);
    return outcome;
}

} // namespace pkbw::cli
