// Starting a rank: the environment of the run's ranks (docs/engine.md), its log file and pipes, and
// the fork and exec that put it in the run's process group with its pipes on stdout, stderr and the
// control descriptor, rank 0 holding the rendezvous listener.
#include "launch_rank.h"
#include "pkbw/core/rank_environment.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/status.h"
#include "subprocess.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace pkbw::cli::launch {
namespace {

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

std::map<std::string, std::string> run_environment(const LaunchSpec& spec, const LaunchOutcome& outcome) {
    std::map<std::string, std::string> common = spec.extra_env;
    common["WORLD_SIZE"] = std::to_string(spec.world_size);
    common["MASTER_ADDR"] = "127.0.0.1";
    common["MASTER_PORT"] = std::to_string(outcome.port);
    common[std::string(rank_environment::kEnvRendezvousPort)] = std::to_string(outcome.port);
    common[std::string(rank_environment::kEnvRendezvousToken)] = outcome.token;
    common[std::string(rank_environment::kEnvControlFd)] = std::to_string(kControlFd);
    common[std::string(rank_environment::kEnvLauncherPid)] = std::to_string(::getpid());
    common[std::string(rank_environment::kEnvSegmentTag)] = outcome.segment_tag;
    if (spec.cuda && !std::getenv("NCCL_NVLS_ENABLE"))
        common["NCCL_NVLS_ENABLE"] = "0";
    return common;
}

std::string start_rank(Rank& rank, int r, const LaunchSpec& spec,
                       const std::map<std::string, std::string>& common, pid_t& group, int listener) {
    rank.report.rank = r;
    rank.report.log_path = run_layout::rank_log(spec.run_dir, r);
    rank.log = UniqueFd(::open(rank.report.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    Pipe out = make_pipe("rank " + std::to_string(r) + " stdout");
    Pipe err = make_pipe("rank " + std::to_string(r) + " stderr");
    Pipe control = make_pipe("rank " + std::to_string(r) + " control");
    auto env_map = common;
    env_map["RANK"] = std::to_string(r);
    env_map["LOCAL_RANK"] = std::to_string(r);
    if (listener >= 0)
        env_map[std::string(rank_environment::kEnvRendezvousListenFd)] = std::to_string(kRendezvousListenFd);
    auto env = current_environment(
        {"TORCHELASTIC_RUN_ID", std::string(rank_environment::kEnvRendezvousListenFd)}, env_map);
    Spawned spawned = spawn_rank(spec, r, group, env, out, err, control, listener);
    if (spawned.pid < 0)
        return spawned.exec_error;
    if (group == 0)
        group = spawned.pid;
    rank.report.pid = spawned.pid;
    rank.out = std::move(out.read);
    rank.err = std::move(err.read);
    rank.control = std::move(control.read);
    for (int fd : {rank.out.get(), rank.err.get(), rank.control.get()})
        set_nonblocking(fd);
    set_phase(rank, spec, status::kPhaseStart);
    return {};
}

} // namespace pkbw::cli::launch
