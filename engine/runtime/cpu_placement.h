// Where a rank's judge and workers run while blocks are timed, and whether they poll their channel
// (docs/perf.md "A steady request"). A block's judge time carries the request's round trip: each
// end's wake-up from a sleep on the channel (a core in a deep idle state takes tens to hundreds of
// microseconds to wake), the core the scheduler happened to give each process, the cache it left.
// Those differ from one worker process to the other and from launch to launch, and the hold cannot
// tell that from a candidate's clock that under-reports. Asked for (PKBW_STEADY), and where the machine
// has the cores, both ends poll the channel instead of sleeping on it, the judge's main thread has a
// core of its own and both workers' main threads share one core (one side runs at a time).
#pragma once

#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace pkbw::engine {

struct CpuPlacement {
    bool spin = false;       // the judge and the workers poll the channel rather than sleep on it
    int judge_cpu = -1;      // the judge's main thread while blocks are timed (-1: not pinned)
    int worker_cpu = -1;     // both workers' main threads (threads they start later inherit it)
    std::string description; // for the timing plan: what was chosen and why
};

// `mode`: PKBW_STEADY: "on" (poll and pin), "spin" (poll, no pinning), anything else or unset: neither,
// the default: on the H200 neither changed how much a request's overhead differs between the two
// workers' processes from launch to launch (docs/perf.md "A steady request"), so they are diagnostics.
// Only the cuda backend's blocks are steadied: on the host backend the calls themselves run on the
// workers' CPU threads, which one core would serialise. Needs 2 x local_world + 2 CPUs in `cpus` (the
// ranks' judges and workers, and room for everything else); the cores are taken from the end of the
// list (CPU 0 usually takes the device interrupts).
CpuPlacement plan_cpu_placement(bool cuda, int local_rank, int local_world, const std::vector<int>& cpus,
                                std::string_view mode);

// The CPUs this thread may run on, ascending.
std::vector<int> allowed_cpus();

// plan_cpu_placement with this process's allowed CPUs and PKBW_STEADY.
CpuPlacement cpu_placement_for_rank(bool cuda, int local_rank, int local_world);

// Pins thread `tid` (a process's pid names its main thread) to `cpu`. Returns "" or why not.
std::string pin_thread(pid_t tid, int cpu);

// Pins the calling thread to `cpu` (nothing when cpu < 0) and gives it back its affinity at the end of
// the scope.
class ScopedPin {
public:
    explicit ScopedPin(int cpu);
    ~ScopedPin();
    ScopedPin(const ScopedPin&) = delete;
    ScopedPin& operator=(const ScopedPin&) = delete;
    const std::string& failure() const { return failure_; }

private:
    bool pinned_ = false;
    std::vector<int> before_;
    std::string failure_;
};

} // namespace pkbw::engine
