#include "cpu_placement.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace pkbw::engine {
namespace {

bool set_affinity(pid_t tid, const std::vector<int>& cpus) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus) {
        CPU_SET(cpu, &set);
    }
    return ::sched_setaffinity(tid, sizeof set, &set) == 0;
}

} // namespace

CpuPlacement plan_cpu_placement(bool cuda, int local_rank, int local_world, const std::vector<int>& cpus,
                                std::string_view mode) {
    CpuPlacement placement;
    if (mode != "on" && mode != "spin") {
        placement.description = "the channel slept on, nothing pinned";
        return placement;
    }
    if (!cuda) {
        placement.description = "the channel slept on, nothing pinned (the host backend's calls run on the "
                                "workers' own threads)";
        return placement;
    }
    const int n = static_cast<int>(cpus.size());
    const int needed = 2 * std::max(local_world, 1) + 2;
    if (n < needed || local_rank < 0 || local_rank >= std::max(local_world, 1)) {
        placement.description = "the channel slept on, nothing pinned (" + std::to_string(n) + " CPUs for " +
                                std::to_string(local_world) + " rank(s): polling needs " +
                                std::to_string(needed) + ")";
        return placement;
    }
    placement.spin = true;
    if (mode == "spin") {
        placement.description = "the channel polled by both ends, nothing pinned (PKBW_STEADY=spin)";
        return placement;
    }
    placement.judge_cpu = cpus[static_cast<std::size_t>(n - 1 - 2 * local_rank)];
    placement.worker_cpu = cpus[static_cast<std::size_t>(n - 2 - 2 * local_rank)];
    placement.description = "the channel polled by both ends; the judge on CPU " +
                            std::to_string(placement.judge_cpu) + ", both workers' main threads on CPU " +
                            std::to_string(placement.worker_cpu);
    return placement;
}

std::vector<int> allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (::sched_getaffinity(0, sizeof set, &set) != 0) {
        return cpus;
    }
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &set)) {
            cpus.push_back(cpu);
        }
    }
    return cpus;
}

CpuPlacement cpu_placement_for_rank(bool cuda, int local_rank, int local_world) {
    const char* mode = std::getenv("PKBW_STEADY");
    return plan_cpu_placement(cuda, local_rank, local_world, allowed_cpus(), mode ? mode : "");
}

std::string pin_thread(pid_t tid, int cpu) {
    if (cpu < 0) {
        return "";
    }
    if (!set_affinity(tid, {cpu})) {
        return "cannot pin thread " + std::to_string(tid) + " to CPU " + std::to_string(cpu) + ": " +
               std::strerror(errno);
    }
    return "";
}

ScopedPin::ScopedPin(int cpu) {
    if (cpu < 0) {
        return;
    }
    before_ = allowed_cpus();
    failure_ = pin_thread(static_cast<pid_t>(::syscall(SYS_gettid)), cpu);
    pinned_ = failure_.empty();
}

ScopedPin::~ScopedPin() {
    if (pinned_ && !before_.empty()) {
        set_affinity(static_cast<pid_t>(::syscall(SYS_gettid)), before_);
    }
}

} // namespace pkbw::engine
