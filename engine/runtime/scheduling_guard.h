// The CPU scheduling of the processes that time the reference (docs/perf.md, "What the timing cannot
// miss"). The candidate runs as the same user, so it may call sched_setaffinity, setpriority or
// sched_setattr on any process it can name in /proc: pin the reference's timing worker to one busy CPU,
// raise its nice, give it SCHED_IDLE or a low utilisation clamp, and the reference is slower while the
// candidate itself is frozen. The judge records its own scheduling before any worker starts (nothing
// untrusted exists yet) and gives it back to every thread of the reference's worker and of itself
// before the round trip's calibration and before each reference block; the candidate is frozen from
// then until the block ends, so whatever it changed never reaches a timed reference call.
#pragma once

#include <sched.h>
#include <string>
#include <sys/types.h>

namespace pkbw::engine {

// One thread's scheduling: CPU affinity, policy, nice, real-time priority and utilisation clamps.
struct ThreadScheduling {
    cpu_set_t affinity{};
    unsigned policy = 0;
    int nice = 0;
    unsigned priority = 0;
    unsigned util_min = 0, util_max = 1024;
    bool has_clamps = false; // the kernel reports clamps (CONFIG_UCLAMP_TASK)
};

// This thread's scheduling now (the judge's, taken before its workers start). Throws pkbw::Error.
ThreadScheduling current_thread_scheduling();

// What restore_scheduling found and did.
struct SchedulingRestore {
    int threads = 0;     // threads looked at
    int restored = 0;    // threads whose scheduling differed and was set back
    int suspicious = 0;  // of those, the process's main thread, or a policy, nice or clamp change:
                         // never what the reference's own libraries do (NCCL sets its helper
                         // threads' affinity to the GPU's NUMA node: that alone is not counted)
    int failed = 0;      // threads whose scheduling could not be set back
    std::string first;   // the first suspicious change, in words ("" when none)
    std::string failure; // the first change that could not be set back ("" when none)
};

// Sets every thread of process `pid` back to `baseline` where it differs. A thread that ended
// meanwhile is skipped. `main_cpu` >= 0: the process's main thread was pinned to that CPU by the
// judge (cpu_placement.h), and that is its baseline's affinity. Never throws.
SchedulingRestore restore_scheduling(pid_t pid, const ThreadScheduling& baseline, int main_cpu = -1);

} // namespace pkbw::engine
