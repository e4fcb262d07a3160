// ProcessContainer: placement in cgroup v2 and the cgroup side of every operation. The signals fallback
// is in containment_signals.cpp.
#include "containment.h"

#include "cgroup_dir.h"
#include "pkbw/core/rank_environment.h"
#include "process_scan.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <random>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pkbw::engine {
namespace {

namespace fs = std::filesystem;

constexpr char kPrefix[] = "pkbw-";

// The label as a file name: letters, digits, '-', '_' and '.', at most 32 of them.
std::string file_name_part(const std::string& label) {
    std::string part;
    for (char c : label.substr(0, 32)) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                           c == '-' || c == '_' || c == '.';
        part += plain ? c : '_';
    }
    return part.empty() ? "tree" : part;
}

std::string random_hex() {
    std::random_device device;
    char text[9];
    std::snprintf(text, sizeof text, "%08x", device());
    return text;
}

// A child that moves itself into the cgroup and exits: whether this process may move processes there
// is decided by rules (write access to the common ancestor's cgroup.procs, delegation, nsdelegate) that
// only the attempt answers. Returns 0 or the child's errno.
int probe_join(int procs_fd) {
    const pid_t pid = ::fork();
    if (pid < 0) {
        return errno;
    }
    if (pid == 0) {
        ::_exit(::write(procs_fd, "0", 1) == 1 ? 0 : (errno & 0xff));
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
}

// The pid in a container's directory name, "pkbw-<pid>-<label>-<random>", or 0.
pid_t owner_of(const std::string& name) {
    if (name.rfind(kPrefix, 0) != 0) {
        return 0;
    }
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + sizeof kPrefix - 1, &end, 10);
    return pid > 0 && *end == '-' ? static_cast<pid_t>(pid) : 0;
}

bool owner_gone(pid_t pid) {
    return pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

// The launcher of a container's judge ("pkbw-<judge>-l<launcher>-..."), 0 when the name has none: while
// it lives, the container is its to reclaim and report, not another run's.
pid_t launcher_of(const std::string& name) {
    const std::size_t at = name.find("-l", sizeof kPrefix - 1);
    if (at == std::string::npos) {
        return 0;
    }
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + at + 2, &end, 10);
    return pid > 0 && *end == '-' ? static_cast<pid_t>(pid) : 0;
}

// This judge's launcher (pkbw), from its environment; empty when started by another launcher.
std::string launcher_part() {
    const char* launcher = std::getenv(rank_environment::kEnvLauncherPid.data());
    const long pid = launcher ? std::atol(launcher) : 0;
    return pid > 0 ? "-l" + std::to_string(pid) : "";
}

} // namespace

ProcessContainer ProcessContainer::create(const std::string& label) {
    ProcessContainer container;
    const char* requested = std::getenv(rank_environment::kEnvContainment.data());
    const std::string mode = requested ? requested : "";
    if (mode == "signals") {
        container.why_ = "PKBW_CONTAINMENT=signals";
        return container;
    }
    if (!mode.empty() && mode != "auto") {
        container.why_ = "PKBW_CONTAINMENT=" + mode.substr(0, 40) + " is not one of auto, signals";
        return container;
    }
    reclaim_orphans();
    std::string why;
    const auto parents = cgroup::container_parents(why);
    for (const auto& parent : parents) {
        const std::string directory = parent + "/" + kPrefix + std::to_string(::getpid()) + launcher_part() +
                                      "-" + file_name_part(label) + "-" + random_hex();
        const std::string failure = container.place(directory);
        if (failure.empty()) {
            return container;
        }
        why += (why.empty() ? "" : "; ") + failure;
    }
    container.why_ = why.empty() ? "no cgroup2 mount" : why;
    return container;
}

std::string ProcessContainer::place(const std::string& directory) {
    if (::mkdir(directory.c_str(), 0755) != 0) {
        return "mkdir " + directory + ": " + std::strerror(errno);
    }
    std::string failure;
    UniqueFd procs(::open((directory + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    UniqueFd events(::open((directory + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC));
    if (::access((directory + "/cgroup.freeze").c_str(), F_OK) != 0) {
        failure = directory + " has no cgroup.freeze (Linux 5.2 or later)";
    } else if (!procs || !events) {
        failure = "cannot open " + directory + "/cgroup.procs or cgroup.events: " + std::strerror(errno);
    } else if (const int code = probe_join(procs.get()); code != 0) {
        failure = "cannot move a process into " + directory + ": " + std::strerror(code);
    }
    if (!failure.empty()) {
        ::rmdir(directory.c_str());
        return failure;
    }
    method_ = Method::CgroupV2;
    directory_ = directory;
    procs_ = std::move(procs);
    events_ = std::move(events);
    // cgroup.kill arrived in Linux 5.14; before it, the frozen tree is killed pid by pid.
    has_kill_file_ = ::access((directory + "/cgroup.kill").c_str(), F_OK) == 0;
    return {};
}

ProcessContainer::ProcessContainer(ProcessContainer&& other) noexcept
    : method_(std::exchange(other.method_, Method::Signals))
    , directory_(std::exchange(other.directory_, {}))
    , why_(std::exchange(other.why_, "moved from"))
    , procs_(std::move(other.procs_))
    , events_(std::move(other.events_))
    , has_kill_file_(std::exchange(other.has_kill_file_, false))
    , root_(std::exchange(other.root_, -1))
    , frozen_(std::exchange(other.frozen_, false))
    , not_ours_(std::exchange(other.not_ours_, {})) {}

ProcessContainer& ProcessContainer::operator=(ProcessContainer&& other) noexcept {
    if (this != &other) {
        release();
        method_ = std::exchange(other.method_, Method::Signals);
        directory_ = std::exchange(other.directory_, {});
        why_ = std::exchange(other.why_, "moved from");
        procs_ = std::move(other.procs_);
        events_ = std::move(other.events_);
        has_kill_file_ = std::exchange(other.has_kill_file_, false);
        root_ = std::exchange(other.root_, -1);
        frozen_ = std::exchange(other.frozen_, false);
        not_ours_ = std::exchange(other.not_ours_, {});
    }
    return *this;
}

ProcessContainer::~ProcessContainer() {
    release();
}

void ProcessContainer::release() noexcept {
    try {
        if (method_ == Method::CgroupV2 || root_ > 0) {
            kill_all(2000);
        }
        if (method_ == Method::CgroupV2) {
            cgroup::remove_tree(directory_);
        }
    } catch (...) {
        // A destructor: what is left is reclaimed by the next container or the launcher.
    }
    procs_.reset();
    events_.reset();
    directory_.clear();
    method_ = Method::Signals;
    root_ = -1;
}

std::string ProcessContainer::describe() const {
    if (method_ == Method::CgroupV2) {
        return "cgroup v2 (" + directory_ + "): frozen and killed as a whole";
    }
    return "signals (no writable cgroup v2: " + why_ +
           "): each process stopped and killed by pid; a process that forks faster than the scan may escape";
}

int ProcessContainer::join_in_child() const noexcept {
    if (method_ != Method::CgroupV2) {
        return 0;
    }
    return ::write(procs_.get(), "0", 1) == 1 ? 0 : errno;
}

void ProcessContainer::set_root(pid_t pid) {
    root_ = pid;
    not_ours_.clear();
    if (method_ == Method::Signals) {
        for (const auto& process : process_scan::all()) {
            if (process.info.ppid == ::getpid() && process.info.pid != pid) {
                not_ours_.insert(process.info.pid);
            }
        }
    }
}

bool ProcessContainer::freeze(int timeout_ms) {
    if (method_ == Method::Signals) {
        return freeze_signals(timeout_ms);
    }
    frozen_ = true;
    const cgroup::Directory group{directory_, events_.get()};
    return group.set_frozen(true, cgroup::deadline_in(timeout_ms));
}

bool ProcessContainer::thaw(int timeout_ms) {
    if (method_ == Method::Signals) {
        return thaw_signals(timeout_ms);
    }
    frozen_ = false;
    const cgroup::Directory group{directory_, events_.get()};
    return group.set_frozen(false, cgroup::deadline_in(timeout_ms));
}

double ProcessContainer::cpu_ms() const {
    if (method_ == Method::Signals) {
        return cpu_ms_signals();
    }
    return cgroup::Directory{directory_, events_.get()}.usage_usec() / 1000.0;
}

std::vector<ProcessInfo> ProcessContainer::members() const {
    if (method_ == Method::Signals) {
        return members_signals();
    }
    std::vector<ProcessInfo> found;
    for (const pid_t pid : cgroup::Directory{directory_, events_.get()}.pids()) {
        if (auto process = process_scan::read(pid); process && !process->dead()) {
            found.push_back(std::move(process->info));
        }
    }
    return found;
}

ProcessContainer::KillReport ProcessContainer::kill_all(int timeout_ms) {
    KillReport report = method_ == Method::CgroupV2 ? kill_cgroup(timeout_ms) : kill_signals(timeout_ms);
    frozen_ = false;
    if (report.named.size() > kMaxNamed) {
        report.named.resize(kMaxNamed);
    }
    return report;
}

ProcessContainer::KillReport ProcessContainer::kill_cgroup(int timeout_ms) {
    const cgroup::Directory group{directory_, events_.get()};
    const cgroup::KillResult result = group.kill_all(has_kill_file_, cgroup::deadline_in(timeout_ms));
    KillReport report;
    report.count_before = static_cast<int>(result.listed);
    report.all_gone = result.emptied;
    process_scan::reap_zombie_children(root_);
    for (const auto& process : result.signalled) {
        if (!process_scan::alive(process.pid)) {
            report.named.push_back(process);
        }
    }
    if (!report.all_gone) {
        report.survivors = members();
    }
    return report;
}

std::vector<ProcessInfo> ProcessContainer::reclaim_orphans(const std::vector<pid_t>& owners) {
    std::vector<ProcessInfo> killed;
    std::string why;
    for (const auto& parent : cgroup::container_parents(why)) {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(parent, ec)) {
            const std::string name = entry.path().filename().string();
            const pid_t owner = owner_of(name);
            const pid_t launcher = launcher_of(name);
            const bool chosen =
                owners.empty() ? owner > 0 && owner_gone(owner) && (launcher == 0 || owner_gone(launcher))
                               : std::find(owners.begin(), owners.end(), owner) != owners.end();
            if (!chosen || !entry.is_directory(ec)) {
                continue;
            }
            UniqueFd events(::open((entry.path() / "cgroup.events").string().c_str(), O_RDONLY | O_CLOEXEC));
            if (!events) {
                continue;
            }
            const cgroup::Directory group{entry.path().string(), events.get()};
            const bool has_kill_file = ::access((entry.path() / "cgroup.kill").string().c_str(), F_OK) == 0;
            const auto result = group.kill_all(has_kill_file, cgroup::deadline_in(2000));
            for (const auto& process : result.signalled) {
                ::waitpid(process.pid, nullptr, WNOHANG); // adopted by this process, a subreaper
                killed.push_back(process);
            }
            cgroup::remove_tree(entry.path().string());
        }
    }
    return killed;
}

} // namespace pkbw::engine
