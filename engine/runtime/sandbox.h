// The candidate process's sandbox (docs/engine.md, "The sandbox"): Landlock filesystem rules where the
// kernel has them, signals scoped to its own domain, no capabilities, no new privileges, resource
// limits; and the process-tree helpers the judge uses to find and kill what a candidate left behind.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

namespace pkbw::engine {

struct SandboxSpec {
    std::vector<std::string> read_paths;   // read and execute
    std::vector<std::string> write_paths;  // read, write, create, remove
    std::vector<std::string> device_paths; // read, write, ioctl (device nodes: /dev)
    std::uint64_t file_size_limit = 8ull << 30;
    // Writes to the process's own /proc/<pid> (the CUDA driver writes there when it starts); added in
    // the child, where /proc/self is the child, not in the parent.
    bool own_proc_writable = false;
};

// What every sandboxed process of pkbw's may use: read the system's libraries and configuration
// (/usr/lib, /usr/bin, /usr/local/cuda, /lib*, /etc, /proc, /sys, the NVIDIA driver's folders and the
// directories of LD_LIBRARY_PATH), the device nodes under /dev, write /dev/shm (host symmetric memory,
// NCCL) and its own /proc/<pid> (the CUDA driver writes there when it starts). Never the user's home,
// the store, the compile cache, the run directories or pkbw's sources: each caller adds its own paths.
SandboxSpec base_sandbox_spec();

// Prepared in the parent (allocates, opens paths); applied in the forked child before exec with
// async-signal-safe system calls only.
class Sandbox {
public:
    static Sandbox prepare(const SandboxSpec& spec);
    // No filesystem rules (PKBW_SANDBOX=off): limits and capabilities only.
    static Sandbox limits_only(const SandboxSpec& spec, std::string why);
    Sandbox(Sandbox&& other) noexcept;
    Sandbox& operator=(Sandbox&&) = delete;
    ~Sandbox();

    // Landlock ABI version in force (0 when unavailable) and, when 0, why.
    int landlock_abi() const { return abi_; }
    const std::string& unavailable_reason() const { return why_; }
    bool signals_scoped() const { return signals_scoped_; }
    // One line for the run's report: "Landlock ABI 7: writes only to ..., signals scoped" or why not.
    std::string describe() const;

    // In the child, after fork: no new privileges, no capabilities, limits, then the Landlock domain.
    // Returns 0, or an errno for the child to report before it exits.
    int apply_in_child() const noexcept;

private:
    Sandbox() = default;
    int ruleset_fd_ = -1;
    int abi_ = 0;
    bool signals_scoped_ = false;
    bool own_proc_writable_ = false;
    std::uint64_t own_proc_rights_ = 0;
    std::uint64_t file_size_limit_ = 0;
    std::string why_;
    std::vector<std::string> writable_;
};

// The Landlock ABI the running kernel offers (0: none), and why not when 0.
int landlock_abi_version(std::string* why = nullptr);

struct ProcessInfo {
    pid_t pid = 0;
    pid_t ppid = 0;
    std::string command; // /proc/<pid>/cmdline, spaces between arguments (comm when empty)
};

// Every living descendant of `root` (children, their children, ...), from /proc.
std::vector<ProcessInfo> descendants_of(pid_t root);
// SIGKILLs every descendant of `root`, reaps those that are this process's children, and returns
// what was killed. Repeats until none is left (a descendant may fork while being killed). Below this
// process itself, the process groups of sessions its descendants made are killed whole as well; those in
// which no process was seen alive (a forker's living process is the one a scan misses) are added to
// `unseen_groups` when given.
// `skip`: children of `root` that are not to be killed, nor what is below them (another worker of the
// same judge).
std::vector<ProcessInfo> kill_descendants(pid_t root, std::vector<pid_t>* unseen_groups = nullptr,
                                          const std::set<pid_t>& skip = {});
// CPU time of every thread of `pid` so far, in ms (schedstat; stat's ticks when unavailable); < 0
// when the process is gone.
double process_cpu_ms(pid_t pid);
// Threads of `pid` (entries of /proc/<pid>/task).
int thread_count(pid_t pid);

} // namespace pkbw::engine
