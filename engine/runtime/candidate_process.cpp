#include "candidate_process.h"

#include "candidate_child.h"
#include "pkbw/core/candidate_protocol.h"
#include "pkbw/core/error.h"
#include "pkbw/core/status.h"
#include "pkbw/tracer_control.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <filesystem>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace pkbw::engine {
namespace {

namespace cp = candidate_protocol;
namespace fs = std::filesystem;
using nlohmann::json;

std::string hex(const std::string& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string text;
    for (unsigned char b : bytes) {
        text += digits[b >> 4];
        text += digits[b & 15];
    }
    return text;
}

} // namespace

CandidateProcess::CandidateProcess(const CandidateLaunch& launch)
    : side_(launch.side)
    , who_(launch.side == "candidate" ? "candidate process" : launch.side + "'s timing worker") {
    // Its own directory, the only place it may write (besides /dev/shm and the trace directory). Named
    // after this judge, so that the launcher can remove it should the judge die without running its
    // destructor (remove_orphaned_candidate_directories, engine/launch/launch_resources.cpp).
    std::string pattern =
        (fs::temp_directory_path() / ("pkbw-candidate-" + std::to_string(::getpid()) + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw CandidateFailure(status::kKindEnvironment,
                               std::string("mkdtemp for the candidate: ") + std::strerror(errno));
    }
    directory_ = pattern;
    // A constructor that throws runs no destructor: the directory goes with the failure.
    struct RemoveIfThrown {
        const std::string& directory;
        const int exceptions = std::uncaught_exceptions();
        ~RemoveIfThrown() {
            if (std::uncaught_exceptions() > exceptions) {
                std::error_code ec;
                fs::remove_all(directory, ec);
            }
        }
    } remove_if_thrown{directory_};
    // The library is copied in: the compile cache it came from stays out of the candidate's reach.
    const fs::path library = fs::path(directory_) / "candidate.so";
    std::error_code ec;
    fs::copy_file(launch.library, library, ec);
    if (ec) {
        throw CandidateFailure(status::kKindEnvironment,
                               "cannot copy " + launch.library + " into " + directory_ + ": " + ec.message());
    }
    if (!launch.trace_dir.empty()) {
        fs::create_directories(launch.trace_dir, ec);
    }
    const SandboxSpec spec = candidate_child::sandbox(launch, directory_);
    sandbox_.emplace(launch.sandbox ? Sandbox::prepare(spec)
                                    : Sandbox::limits_only(spec, "PKBW_SANDBOX=off"));
    container_.emplace(ProcessContainer::create("cand-r" + std::to_string(launch.rank)));

    auto [channel, child_fd] = Channel::make_pair();
    channel_ = std::move(channel);
    std::vector<std::string> env_storage = candidate_child::environment(launch, directory_);
    std::vector<char*> envp;
    for (auto& e : env_storage) {
        envp.push_back(e.data());
    }
    envp.push_back(nullptr);
    std::string program = launch.program;
    std::string channel_arg = std::to_string(candidate_child::kChannelFd);
    char flag[] = "--channel";
    char* argv[] = {program.data(), flag, channel_arg.data(), nullptr};
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        throw CandidateFailure(status::kKindEnvironment, std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        exec_in_child(launch, child_fd, argv, envp.data(), parent);
    }
    pid_ = pid;
    container_->set_root(pid);
    ::close(child_fd);

    send_setup(launch, library);
}

void CandidateProcess::exec_in_child(const CandidateLaunch& launch, int child_fd, char* const argv[],
                                     char* const envp[], pid_t parent) {
    // Only async-signal-safe calls from here to exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) {
        ::_exit(126);
    }
    // Into the container before anything of the candidate's runs, so that all it starts is inside.
    int code = container_->join_in_child();
    // Moved high first: the channel's dup2 or the sandbox's ruleset could sit on its number.
    const int listener = code == 0 && launch.rendezvous_listen_fd >= 0
                             ? ::fcntl(launch.rendezvous_listen_fd, F_DUPFD_CLOEXEC, 64)
                             : -1;
    if (code == 0 && launch.rendezvous_listen_fd >= 0 && listener < 0) {
        code = errno;
    }
    if (code == 0 && child_fd == candidate_child::kChannelFd) {
        ::fcntl(child_fd, F_SETFD, 0);
    } else if (code == 0 && ::dup2(child_fd, candidate_child::kChannelFd) < 0) {
        code = errno;
    }
    // The sandbox first: its ruleset is a descriptor above the channel.
    if (code == 0) {
        code = sandbox_->apply_in_child();
    }
    if (code == 0 && listener >= 0 && ::dup2(listener, candidate_child::kListenFd) < 0) {
        code = errno;
    }
    // Nothing else of the judge's: the control pipe, the rendezvous sockets, the run's files.
    const int first_closed = listener >= 0 ? candidate_child::kListenFd + 1 : candidate_child::kChannelFd + 1;
    if (code == 0 && ::syscall(SYS_close_range, first_closed, ~0U, 0) != 0) {
        for (int fd = first_closed; fd < 4096; ++fd) {
            ::close(fd);
        }
    }
    if (code == 0) {
        ::execve(argv[0], argv, envp);
        code = errno;
    }
    // Every descriptor above the channel is closed by now: stderr (the rank's log) and the exit
    // code carry the failure.
    const char* what = ::strerrordesc_np(code);
    const char prefix[] = "pkbw-candidate: cannot start in the sandbox: ";
    [[maybe_unused]] auto n = ::write(2, prefix, sizeof prefix - 1);
    n = ::write(2, what, ::strlen(what));
    n = ::write(2, "\n", 1);
    ::_exit(code == EACCES || code == EPERM ? 125 : 127);
}

void CandidateProcess::send_setup(const CandidateLaunch& launch, const fs::path& library) {
    json setup = {
        {"msg", cp::kSetup},           {"version", cp::kVersion},         {"backend", launch.backend},
        {"rank", launch.rank},         {"world_size", launch.world_size}, {"local_rank", launch.local_rank},
        {"library", library.string()}, {"shm_prefix", launch.shm_prefix}, {"params", launch.params}};
    if (!launch.trace_dir.empty()) {
        setup["trace_dir"] = launch.trace_dir;
    }
    if (launch.spin) {
        setup["spin"] = true;
        channel_.set_spin(kChannelSpinPolls);
    }
    try {
        channel_.send(setup);
    } catch (const Error&) {
        died("setup");
    }
}

void CandidateProcess::wait_ready(SharedBuffers& buffers) {
    const auto ready = channel_.receive();
    if (!ready) {
        died("setup");
    }
    if (!ready->value("ok", false)) {
        throw CandidateFailure(ready->value("kind", std::string(status::kKindEnvironment)),
                               ready->value("message", "setup failed"));
    }
    buffers_ = &buffers;
    listener_ = buffers_->add_release_listener([this](int id) { unmap(id); });
}

CandidateProcess::~CandidateProcess() {
    if (buffers_) {
        buffers_->remove_release_listener(listener_);
    }
    if (!exited_ && pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    container_.reset(); // kills what is left in it, removes its cgroup
    if (pid_ > 0) {
        kill_descendants(::getpid(), nullptr, siblings_);
    }
    std::error_code ec;
    if (!directory_.empty()) {
        fs::remove_all(directory_, ec);
    }
}

void CandidateProcess::died(const std::string& during) {
    int status = 0;
    int signal = 0, code = -1;
    // The channel closed: the process is ending; wait for it (bounded: a stuck exit is killed).
    for (int i = 0; i < 500; ++i) {
        const pid_t got = ::waitpid(pid_, &status, WNOHANG);
        if (got == pid_) {
            exited_ = true;
            break;
        }
        if (i == 499) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, &status, 0);
            exited_ = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::string how;
    if (WIFSIGNALED(status)) {
        signal = WTERMSIG(status);
        how =
            std::string("was killed by signal ") + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
    } else if (WIFEXITED(status)) {
        code = WEXITSTATUS(status);
        how = "exited with code " + std::to_string(code);
        if (during == "setup" && (code == 125 || code == 127)) {
            how += code == 125 ? " (the sandbox could not be applied)"
                               : " (pkbw-candidate could not be started)";
        }
    }
    throw CandidateFailure("died",
                           "the " + who_ + " (pid " + std::to_string(pid_) + ") " + how + " during " + during,
                           signal, code);
}

json CandidateProcess::request(const json& message, const std::vector<int>& fds) {
    try {
        return exchange(message, fds);
    } catch (CandidateFailure& failure) {
        failure.side = side_;
        throw;
    }
}

json CandidateProcess::exchange(const json& message, const std::vector<int>& fds) {
    const std::string msg = message.at("msg").get<std::string>();
    try {
        channel_.send(message, fds);
    } catch (const Error&) {
        died(msg);
    }
    std::optional<json> reply;
    try {
        reply = channel_.receive();
    } catch (const FormatError& error) {
        // A malformed answer: the candidate wrote into the channel (its only inherited descriptor).
        throw CandidateFailure(std::string(cp::kFailProtocol),
                               "the " + who_ +
                                   " broke its channel to the judge (it wrote something that is "
                                   "not the channel's protocol: " +
                                   std::string(error.what()) + ")");
    }
    if (!reply) {
        died(msg);
    }
    if (reply->value("msg", "") != msg) {
        throw CandidateFailure(std::string(cp::kFailProtocol),
                               "the " + who_ + " broke its channel to the judge (it answered '" +
                                   reply->value("msg", "") + "' to '" + msg + "')");
    }
    if (!reply->value("ok", false)) {
        throw CandidateFailure(reply->value("kind", std::string(cp::kFailProtocol)),
                               reply->value("message", std::string("no message")));
    }
    return *reply;
}

SharedBuffers::Location CandidateProcess::ensure_mapped(const TensorView& view) {
    return ensure_mapped(view.data, view.nbytes(), std::string("tensor '") + view.name + "'");
}

SharedBuffers::Location CandidateProcess::ensure_mapped(const void* data, std::size_t bytes,
                                                        const std::string& name) {
    const auto location = buffers_->locate(data, bytes);
    if (!location) {
        throw Error(name + " is not in memory shared with the candidate");
    }
    if (mapped_.count(location->id)) {
        return *location;
    }
    const SharedAllocation& allocation = buffers_->allocation(location->id);
    json buffer = {{"id", location->id}, {"bytes", allocation.bytes}};
    std::vector<int> fds;
    if (allocation.handle.fd >= 0) {
        fds.push_back(allocation.handle.fd);
    } else {
        buffer["ipc"] = hex(allocation.handle.ipc);
    }
    request({{"msg", cp::kMap}, {"buffers", json::array({buffer})}}, fds);
    mapped_.insert(location->id);
    return *location;
}

void CandidateProcess::unmap(int id) {
    if (!mapped_.erase(id) || exited_) {
        return;
    }
    try {
        request({{"msg", cp::kUnmap}, {"ids", {id}}});
    } catch (const std::exception&) {
        // Gone: its mappings went with it.
    }
}

json CandidateProcess::describe(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs,
                                const std::int64_t* output_lengths) {
    auto list = [&](const std::vector<TensorView>& views) {
        json out = json::array();
        for (const auto& view : views) {
            const auto location = ensure_mapped(view);
            out.push_back({{"name", view.name},
                           {"dtype", static_cast<int>(view.dtype)},
                           {"shape", std::vector<std::int64_t>(view.shape, view.shape + view.ndim)},
                           {"buffer", location.id},
                           {"offset", location.offset}});
        }
        return out;
    };
    json views = {{"inputs", list(inputs)}, {"outputs", list(outputs)}};
    if (output_lengths != nullptr) {
        const auto location =
            ensure_mapped(output_lengths, outputs.size() * sizeof(std::int64_t), "the output length slots");
        views["lengths"] = {{"buffer", location.id}, {"offset", location.offset}};
    }
    return views;
}

void CandidateProcess::call(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs,
                            const std::map<std::string, double>& params, const std::int64_t* output_lengths) {
    json message = describe(inputs, outputs, output_lengths);
    message["msg"] = cp::kCall;
    message["params"] = params;
    request(message);
}

int CandidateProcess::define_views(const std::vector<TensorView>& inputs,
                                   const std::vector<TensorView>& outputs,
                                   const std::int64_t* output_lengths) {
    json message = describe(inputs, outputs, output_lengths);
    const int id = next_views_++;
    message["msg"] = cp::kViews;
    message["id"] = id;
    request(message);
    return id;
}

bool CandidateProcess::freeze(int timeout_ms) {
    return container_->freeze(timeout_ms);
}

bool CandidateProcess::thaw(int timeout_ms) {
    return container_->thaw(timeout_ms);
}

double CandidateProcess::tree_cpu_ms() const {
    return container_->cpu_ms();
}

double CandidateProcess::cpu_ms() const {
    return exited_ ? -1 : process_cpu_ms(pid_);
}

int CandidateProcess::threads() const {
    return exited_ ? 0 : thread_count(pid_);
}

void CandidateProcess::request_quit() {
    if (buffers_) {
        buffers_->remove_release_listener(listener_); // its mappings go with its exit
    }
    if (!exited_ && !quit_sent_) {
        quit_sent_ = true;
        try {
            channel_.send({{"msg", cp::kQuit}});
        } catch (const std::exception&) {
        }
    }
}

CandidateLeftovers CandidateProcess::finish() {
    request_quit();
    if (!exited_) {
        try {
            channel_.receive(nullptr, 10000);
        } catch (const std::exception&) {
        }
        for (int i = 0; i < 2500 && !exited_; ++i) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                exited_ = true;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        if (!exited_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
            exited_ = true;
        }
    }
    return kill_tree();
}

CandidateLeftovers CandidateProcess::kill_tree() {
    CandidateLeftovers left;
    const auto report = container_->kill_all(3000);
    // The candidate process itself is counted when it was still running (a failure before it quit).
    bool candidate_listed = false;
    for (const auto& process : report.named) {
        if (process.pid != pid_) {
            left.killed.push_back(process);
        }
        candidate_listed = candidate_listed || process.pid == pid_;
    }
    for (const auto& process : report.survivors) {
        candidate_listed = candidate_listed || process.pid == pid_;
    }
    left.count =
        std::max(report.count_before - (candidate_listed ? 1 : 0), static_cast<int>(left.killed.size())) +
        static_cast<int>(report.groups.size());
    left.survivors = report.survivors;
    left.groups = report.groups;
    // Orphans of the candidate are re-parented to the judge (PR_SET_CHILD_SUBREAPER): a process that left
    // the container (a candidate that may write to the cgroup file system, without Landlock) is still
    // found here.
    std::vector<pid_t> groups;
    for (const auto& process : kill_descendants(::getpid(), &groups, siblings_)) {
        if (process.pid != pid_) {
            left.killed.push_back(process);
            ++left.count;
        }
    }
    left.groups.insert(left.groups.end(), groups.begin(), groups.end());
    left.count += static_cast<int>(groups.size());
    return left;
}

} // namespace pkbw::engine
