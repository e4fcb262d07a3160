#include "scheduling_guard.h"

#include "pkbw/core/error.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace pkbw::engine {

namespace {

// The kernel's struct sched_attr (include/uapi/linux/sched/types.h, size 56 with the clamps): glibc
// 2.36 has no sched_getattr/sched_setattr wrapper, and the header would clash with <sched.h>.
struct KernelSchedAttr {
    std::uint32_t size = sizeof(KernelSchedAttr);
    std::uint32_t sched_policy = 0;
    std::uint64_t sched_flags = 0;
    std::int32_t sched_nice = 0;
    std::uint32_t sched_priority = 0;
    std::uint64_t sched_runtime = 0, sched_deadline = 0, sched_period = 0;
    std::uint32_t sched_util_min = 0, sched_util_max = 0;
};
static_assert(sizeof(KernelSchedAttr) == 56);

constexpr std::uint64_t kUtilClampMin = 0x20, kUtilClampMax = 0x40; // SCHED_FLAG_UTIL_CLAMP_{MIN,MAX}

bool read_scheduling(pid_t tid, ThreadScheduling& out) {
    KernelSchedAttr attr;
    if (::syscall(SYS_sched_getattr, tid, &attr, sizeof attr, 0) != 0 ||
        ::sched_getaffinity(tid, sizeof out.affinity, &out.affinity) != 0) {
        return false;
    }
    out.policy = attr.sched_policy;
    out.nice = attr.sched_nice;
    out.priority = attr.sched_priority;
    out.util_min = attr.sched_util_min;
    out.util_max = attr.sched_util_max;
    out.has_clamps = attr.sched_util_max != 0; // zero both without CONFIG_UCLAMP_TASK
    return true;
}

bool same_class(const ThreadScheduling& a, const ThreadScheduling& b) {
    return a.policy == b.policy && a.nice == b.nice && a.priority == b.priority &&
           (!a.has_clamps || !b.has_clamps || (a.util_min == b.util_min && a.util_max == b.util_max));
}

std::string describe_change(pid_t pid, pid_t tid, const ThreadScheduling& was,
                            const ThreadScheduling& wanted) {
    std::string text = (tid == pid ? "its main thread" : "thread " + std::to_string(tid)) + " had";
    if (!CPU_EQUAL(&was.affinity, &wanted.affinity)) {
        text += " " + std::to_string(CPU_COUNT(&was.affinity)) + " CPU(s) instead of " +
                std::to_string(CPU_COUNT(&wanted.affinity));
    }
    if (was.policy != wanted.policy) {
        text += " policy " + std::to_string(was.policy) + " instead of " + std::to_string(wanted.policy);
    }
    if (was.nice != wanted.nice) {
        text += " nice " + std::to_string(was.nice) + " instead of " + std::to_string(wanted.nice);
    }
    if (was.priority != wanted.priority) {
        text += " priority " + std::to_string(was.priority);
    }
    if (was.has_clamps && wanted.has_clamps &&
        (was.util_min != wanted.util_min || was.util_max != wanted.util_max)) {
        text += " utilisation clamp " + std::to_string(was.util_min) + ".." + std::to_string(was.util_max);
    }
    return text;
}

// Sets `tid` back to `wanted`; false when the kernel refused (an errno is left).
bool set_scheduling(pid_t tid, const ThreadScheduling& was, const ThreadScheduling& wanted) {
    if (!CPU_EQUAL(&was.affinity, &wanted.affinity) &&
        ::sched_setaffinity(tid, sizeof wanted.affinity, &wanted.affinity) != 0) {
        return false;
    }
    if (same_class(was, wanted)) {
        return true;
    }
    KernelSchedAttr attr;
    attr.sched_policy = wanted.policy;
    attr.sched_nice = wanted.nice;
    attr.sched_priority = wanted.priority;
    if (was.has_clamps && wanted.has_clamps) {
        attr.sched_flags = kUtilClampMin | kUtilClampMax;
        attr.sched_util_min = wanted.util_min;
        attr.sched_util_max = wanted.util_max;
    }
    return ::syscall(SYS_sched_setattr, tid, &attr, 0) == 0;
}

std::vector<pid_t> threads_of(pid_t pid) {
    std::vector<pid_t> tids;
    const std::string path = "/proc/" + std::to_string(pid) + "/task";
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) {
        return tids;
    }
    while (const dirent* entry = ::readdir(dir)) {
        if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9') {
            tids.push_back(static_cast<pid_t>(std::atol(entry->d_name)));
        }
    }
    ::closedir(dir);
    return tids;
}

} // namespace

ThreadScheduling current_thread_scheduling() {
    ThreadScheduling scheduling;
    if (!read_scheduling(static_cast<pid_t>(::syscall(SYS_gettid)), scheduling)) {
        throw Error(std::string("reading this process's CPU scheduling: ") + std::strerror(errno));
    }
    return scheduling;
}

SchedulingRestore restore_scheduling(pid_t pid, const ThreadScheduling& common, int main_cpu) {
    SchedulingRestore result;
    ThreadScheduling pinned = common;
    if (main_cpu >= 0) {
        CPU_ZERO(&pinned.affinity);
        CPU_SET(main_cpu, &pinned.affinity);
    }
    for (const pid_t tid : threads_of(pid)) {
        const ThreadScheduling& baseline = tid == pid ? pinned : common;
        ThreadScheduling now;
        if (!read_scheduling(tid, now)) {
            continue; // ended meanwhile
        }
        ++result.threads;
        const bool same_cpus = CPU_EQUAL(&now.affinity, &baseline.affinity) != 0;
        if (same_cpus && same_class(now, baseline)) {
            continue;
        }
        const bool suspicious = tid == pid || !same_class(now, baseline);
        if (!set_scheduling(tid, now, baseline)) {
            const int code = errno;
            if (code == ESRCH) {
                continue;
            }
            ++result.failed;
            if (result.failure.empty()) {
                result.failure = describe_change(pid, tid, now, baseline) + " and could not be set back (" +
                                 std::strerror(code) + ")";
            }
            continue;
        }
        ++result.restored;
        if (suspicious) {
            ++result.suspicious;
            if (result.first.empty()) {
                result.first = describe_change(pid, tid, now, baseline);
            }
        }
    }
    return result;
}

} // namespace pkbw::engine
