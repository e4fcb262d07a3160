// Adversarial candidate: computes the right answer, and on its first call (an eval trial, long before
// anything is timed) finds the reference's timing workers and pins them all to one CPU. They are
// processes of the same user, named like the candidate's (pkbw-candidate), children of the judges (whose
// parent is the candidate's grandparent), but not among the candidate's own pids, and /proc is readable
// in the sandbox; sched_setaffinity on a process of the same uid needs
// no capability and Landlock does not scope it. Pinned together, the reference's ranks take turns on
// one core: every reference block is slower, and so is the round trip calibrated on that worker (which
// is subtracted from the candidate's blocks). Nothing of the candidate runs while the reference is timed,
// so its tree's frozen CPU stays at zero. What pkbw should say: invalid_timing (or refuse to time a
// reference whose workers' affinity or scheduling was changed from outside).
#include "pkbw/solution.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <sched.h>
#include <unistd.h>

namespace {

bool read_line(const char* path, char* buffer, int size) {
    FILE* f = std::fopen(path, "r");
    if (!f) {
        return false;
    }
    const bool ok = std::fgets(buffer, size, f) != nullptr;
    std::fclose(f);
    return ok;
}

int parent_of(int pid) {
    char path[64], stat[512] = {};
    std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (!read_line(path, stat, sizeof stat)) {
        return -1;
    }
    const char* close = std::strrchr(stat, ')');
    int parent = -1;
    return close && std::sscanf(close + 2, "%*c %d", &parent) == 1 ? parent : -1;
}

// Pins every process of this run (a child of a judge: its parent has this process's grandparent) named
// like this one that is not one of `ours` to CPU 0.
int pin_others(const int* ours, int count) {
    const int launcher = parent_of(getppid());
    char self[64] = {};
    read_line("/proc/self/comm", self, sizeof self);
    DIR* proc = opendir("/proc");
    if (!proc) {
        return 0;
    }
    int pinned = 0;
    while (dirent* entry = readdir(proc)) {
        const int pid = std::atoi(entry->d_name);
        if (pid <= 0) {
            continue;
        }
        bool mine = false;
        for (int i = 0; i < count; ++i) {
            mine = mine || ours[i] == pid;
        }
        char path[64], comm[64] = {};
        std::snprintf(path, sizeof path, "/proc/%d/comm", pid);
        if (mine || !read_line(path, comm, sizeof comm) || std::strcmp(comm, self) != 0 ||
            parent_of(parent_of(pid)) != launcher) {
            continue;
        }
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        pinned += sched_setaffinity(pid, sizeof one, &one) == 0;
#ifdef ALSO_IDLE
        const sched_param none{};
        sched_setscheduler(pid, SCHED_IDLE, &none);
#endif
    }
    closedir(proc);
    return pinned;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool done = false;
    if (!done) {
        done = true;
        int mine = getpid(), all[pkbw::kMaxRanks] = {};
        ctx.all_gather_host(&mine, sizeof mine, all);
        if (ctx.rank == 0) {
            std::fprintf(stderr, "pin_reference: pinned %d process(es) to CPU 0\n", pin_others(all, ctx.world_size));
        }
    }
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("pin", in.nbytes());
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
