#include "sandbox.h"

#include "pkbw/core/error.h"
#include "process_scan.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <set>
#include <sstream>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

// Debian 12's kernel headers stop at Landlock ABI 2; the rights and the ruleset layout of later ABIs
// are fixed by the kernel's ABI, so they are spelled out here and used only where the kernel
// reports that ABI.
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

namespace pkbw::engine {
namespace {

constexpr std::uint64_t kExecute = 1ull << 0, kWriteFile = 1ull << 1, kReadFile = 1ull << 2,
                        kReadDir = 1ull << 3, kRemoveDir = 1ull << 4, kRemoveFile = 1ull << 5,
                        kMakeChar = 1ull << 6, kMakeDir = 1ull << 7, kMakeReg = 1ull << 8,
                        kMakeSock = 1ull << 9, kMakeFifo = 1ull << 10, kMakeBlock = 1ull << 11,
                        kMakeSym = 1ull << 12, kRefer = 1ull << 13, kTruncate = 1ull << 14,
                        kIoctlDev = 1ull << 15;
constexpr std::uint64_t kScopeSignal = 1ull << 1;
constexpr std::uint32_t kCreateVersion = 1u << 0;
constexpr int kRulePathBeneath = 1;

// The kernel's struct landlock_ruleset_attr, as of ABI 6 (the size passed tells the kernel which
// fields are present).
struct RulesetAttr {
    std::uint64_t handled_access_fs;
    std::uint64_t handled_access_net;
    std::uint64_t scoped;
};

struct __attribute__((packed)) PathBeneathAttr {
    std::uint64_t allowed_access;
    std::int32_t parent_fd;
};

std::uint64_t fs_rights_for(int abi) {
    std::uint64_t rights = kExecute | kWriteFile | kReadFile | kReadDir | kRemoveDir | kRemoveFile |
                           kMakeChar | kMakeDir | kMakeReg | kMakeSock | kMakeFifo | kMakeBlock | kMakeSym;
    if (abi >= 2) {
        rights |= kRefer;
    }
    if (abi >= 3) {
        rights |= kTruncate;
    }
    if (abi >= 5) {
        rights |= kIoctlDev;
    }
    return rights;
}

// Rights a rule on a non-directory may carry.
constexpr std::uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

int landlock_abi_version(std::string* why) {
    const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateVersion);
    if (abi < 0) {
        if (why) {
            *why = errno == ENOSYS
                       ? "the kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)"
                   : errno == EOPNOTSUPP
                       ? "Landlock is built into the kernel but not enabled (boot with lsm=...,landlock)"
                       : std::string("landlock_create_ruleset: ") + std::strerror(errno);
        }
        return 0;
    }
    return static_cast<int>(abi);
}

SandboxSpec base_sandbox_spec() {
    SandboxSpec spec;
    spec.read_paths = {"/usr/lib",
                       "/usr/lib64",
                       "/usr/lib32",
                       "/usr/libexec",
                       "/usr/bin",
                       "/usr/sbin",
                       "/usr/local/lib",
                       "/usr/local/cuda",
                       "/usr/local/nvidia",
                       "/usr/share/nvidia",
                       "/lib",
                       "/lib64",
                       "/lib32",
                       "/bin",
                       "/sbin",
                       "/etc",
                       "/proc",
                       "/sys",
                       "/opt/nvidia",
                       "/run/nvidia-persistenced"};
    if (const char* paths = std::getenv("LD_LIBRARY_PATH")) {
        const std::string list = paths;
        for (std::size_t start = 0; start <= list.size();) {
            const std::size_t end = std::min(list.find(':', start), list.size());
            if (end > start) {
                spec.read_paths.push_back(list.substr(start, end - start));
            }
            start = end + 1;
        }
    }
    spec.device_paths = {"/dev"};
    spec.write_paths = {"/dev/shm"};
    // Without it the CUDA driver fails with "OS call failed" (measured on the H200 with
    // tools/gpu/sandbox_probe.cpp); no other /proc entry is writable.
    spec.own_proc_writable = true;
    return spec;
}

Sandbox Sandbox::limits_only(const SandboxSpec& spec, std::string why) {
    Sandbox sandbox;
    sandbox.file_size_limit_ = spec.file_size_limit;
    sandbox.why_ = std::move(why);
    return sandbox;
}

Sandbox Sandbox::prepare(const SandboxSpec& spec) {
    std::string why;
    const int abi = landlock_abi_version(&why);
    if (abi <= 0) {
        return limits_only(spec, why);
    }
    const std::uint64_t handled = fs_rights_for(abi);
    RulesetAttr attr{handled, 0, 0};
    std::size_t attr_size = sizeof(std::uint64_t);
    if (abi >= 6) {
        attr.scoped = kScopeSignal; // no signal to a process outside the candidate's domain (the judge)
        attr_size = sizeof(RulesetAttr);
    }
    const int fd = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0));
    if (fd < 0) {
        return limits_only(spec, std::string("landlock_create_ruleset: ") + std::strerror(errno));
    }
    Sandbox sandbox;
    sandbox.ruleset_fd_ = fd;
    sandbox.abi_ = abi;
    sandbox.signals_scoped_ = abi >= 6;
    sandbox.file_size_limit_ = spec.file_size_limit;
    const std::uint64_t read = kExecute | kReadFile | kReadDir;
    const std::uint64_t write = handled & ~(kMakeChar | kMakeBlock);
    const std::uint64_t device = read | kWriteFile | (handled & (kTruncate | kIoctlDev));
    auto add = [&](const std::string& path, std::uint64_t rights) {
        const int target = ::open(path.c_str(), O_PATH | O_CLOEXEC);
        if (target < 0) {
            return; // a path this machine does not have
        }
        struct stat st {};
        if (::fstat(target, &st) == 0 && !S_ISDIR(st.st_mode)) {
            rights &= kFileRights;
        }
        PathBeneathAttr rule{rights & handled, target};
        if (::syscall(SYS_landlock_add_rule, fd, kRulePathBeneath, &rule, 0) != 0) {
            const int code = errno;
            ::close(target);
            throw Error("sandbox: cannot add a Landlock rule for " + path + ": " + std::strerror(code));
        }
        ::close(target);
    };
    for (const auto& path : spec.read_paths) {
        add(path, read);
    }
    for (const auto& path : spec.device_paths) {
        add(path, device);
    }
    for (const auto& path : spec.write_paths) {
        add(path, write);
        sandbox.writable_.push_back(path);
    }
    sandbox.own_proc_writable_ = spec.own_proc_writable;
    sandbox.own_proc_rights_ = (read | kWriteFile | kTruncate) & handled;
    return sandbox;
}

Sandbox::Sandbox(Sandbox&& other) noexcept
    : ruleset_fd_(std::exchange(other.ruleset_fd_, -1))
    , abi_(other.abi_)
    , signals_scoped_(other.signals_scoped_)
    , own_proc_writable_(other.own_proc_writable_)
    , own_proc_rights_(other.own_proc_rights_)
    , file_size_limit_(other.file_size_limit_)
    , why_(std::move(other.why_))
    , writable_(std::move(other.writable_)) {}

Sandbox::~Sandbox() {
    if (ruleset_fd_ >= 0) {
        ::close(ruleset_fd_);
    }
}

std::string Sandbox::describe() const {
    if (abi_ == 0) {
        return "no filesystem sandbox (" + why_ +
               "): the candidate can read and write whatever this user can";
    }
    std::string text = "Landlock ABI " + std::to_string(abi_) + ": writes only to";
    for (const auto& path : writable_) {
        text += " " + path;
    }
    if (own_proc_writable_) {
        text += " /proc/<its pid>";
    }
    text +=
        signals_scoped_ ? "; signals scoped to its own processes" : "; signals not scoped (Landlock ABI < 6)";
#if defined(__x86_64__)
    return text + "; no process started in another cgroup (clone3 refused)";
#else
    return text + "; clone3 not filtered on this architecture (a process could start in another cgroup)";
#endif
}

namespace {

// The candidate may not start a process in another cgroup, where its freeze would not reach it:
// clone3, the only call that takes CLONE_INTO_CGROUP, fails with ENOSYS (glibc then falls back to clone,
// which has no such flag), and so do x32-ABI calls (their numbers alias another table); other
// architectures' calls end the process. Writing a pid into another cgroup's cgroup.procs is Landlock's
// to refuse. A filter by hand: libseccomp for seven instructions would be a run-time dependency of every
// GPU machine (docs/architecture.md).
int refuse_clone_into_cgroup() noexcept {
#if defined(__x86_64__)
    constexpr unsigned kX32Bit = 0x40000000u;
    static const sock_filter instructions[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, kX32Bit, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    const sock_fprog program{static_cast<unsigned short>(sizeof instructions / sizeof instructions[0]),
                             const_cast<sock_filter*>(instructions)};
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0) {
        return errno;
    }
#endif
    return 0;
}

} // namespace

int Sandbox::apply_in_child() const noexcept {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        return errno;
    }
    // No capability survives the exec: an empty bounding set leaves root with none (EPERM: not root,
    // nothing to drop).
    for (int cap = 0; cap < 64; ++cap) {
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) {
            break;
        }
    }
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    if (file_size_limit_ > 0) {
        const rlimit size{file_size_limit_, file_size_limit_};
        ::setrlimit(RLIMIT_FSIZE, &size);
    }
    if (ruleset_fd_ >= 0 && own_proc_writable_) {
        const int self = ::open("/proc/self", O_PATH | O_CLOEXEC);
        if (self < 0) {
            return errno;
        }
        PathBeneathAttr rule{own_proc_rights_, self};
        const long added = ::syscall(SYS_landlock_add_rule, ruleset_fd_, kRulePathBeneath, &rule, 0);
        const int code = errno;
        ::close(self);
        if (added != 0) {
            return code;
        }
    }
    if (ruleset_fd_ >= 0 && ::syscall(SYS_landlock_restrict_self, ruleset_fd_, 0) != 0) {
        return errno;
    }
    return refuse_clone_into_cgroup();
}

std::vector<ProcessInfo> descendants_of(pid_t root) {
    std::vector<ProcessInfo> found;
    for (auto& process : process_scan::below(process_scan::all(), root)) {
        found.push_back(std::move(process.info));
    }
    return found;
}

std::vector<ProcessInfo> kill_descendants(pid_t root, std::vector<pid_t>* unseen_groups,
                                          const std::set<pid_t>& skip) {
    std::vector<ProcessInfo> killed;
    std::set<pid_t> reported, groups, groups_killed, groups_seen;
    // Below this process, a subreaper, the process groups of the sessions its descendants made are killed
    // whole too: a process that forks and exits faster than a scan is caught there (process_scan.h).
    const bool below_self = root == ::getpid();
    for (int round = 0; round < 20; ++round) {
        process_scan::Tree tree;
        if (below_self) {
            tree = process_scan::tree_below_self(skip);
        } else {
            tree.living = process_scan::below(process_scan::all(), root, skip);
        }
        groups.merge(tree.groups);
        // Zombies keep a group signallable: reaped first, a group that takes the signal had a living
        // process in it.
        while (::waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        groups_killed.merge(process_scan::signal_groups(groups, SIGKILL));
        if (tree.living.empty() && groups.empty()) {
            break;
        }
        for (const auto& process : tree.living) {
            ::kill(process.info.pid, SIGKILL);
            if (reported.insert(process.info.pid).second) {
                killed.push_back(process.info);
                groups_seen.insert(process.group);
            }
        }
        // Reap our own children (orphans are re-parented to us as the subreaper): every zombie, so that a
        // group is empty once its processes are dead.
        for (int i = 0; i < 50; ++i) {
            while (::waitpid(-1, nullptr, WNOHANG) > 0) {
            }
            if (process_scan::below(process_scan::all(), root, skip).empty()) {
                break;
            }
            ::usleep(2000);
        }
    }
    for (const pid_t group : groups_killed) {
        if (unseen_groups && !groups_seen.count(group)) {
            unseen_groups->push_back(group);
        }
    }
    return killed;
}

double process_cpu_ms(pid_t pid) {
    const std::string base = "/proc/" + std::to_string(pid);
    DIR* tasks = ::opendir((base + "/task").c_str());
    if (tasks == nullptr) {
        return -1;
    }
    double total_ns = 0;
    bool any = false;
    while (dirent* entry = ::readdir(tasks)) {
        if (entry->d_name[0] == '.') {
            continue;
        }
        const std::string schedstat = read_text(base + "/task/" + entry->d_name + "/schedstat");
        if (!schedstat.empty()) {
            total_ns += std::strtod(schedstat.c_str(), nullptr);
            any = true;
        }
    }
    ::closedir(tasks);
    if (any) {
        return total_ns / 1e6;
    }
    // Without schedstat: utime + stime in clock ticks (fields 14 and 15).
    const std::string stat = read_text(base + "/stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) {
        return -1;
    }
    std::istringstream fields(stat.substr(close + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; fields >> field; ++i) {
        if (i == 14 || i == 15) {
            ticks += std::strtod(field.c_str(), nullptr);
        }
        if (i == 15) {
            break;
        }
    }
    return ticks * 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

int thread_count(pid_t pid) {
    DIR* tasks = ::opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
    if (tasks == nullptr) {
        return 0;
    }
    int count = 0;
    while (dirent* entry = ::readdir(tasks)) {
        count += entry->d_name[0] != '.';
    }
    ::closedir(tasks);
    return count;
}

} // namespace pkbw::engine
