// The judge's scheduling guard (engine/runtime/scheduling_guard.h) and the output fingerprint
// (slot_fingerprint.h): what stops a candidate from slowing the reference's worker through its CPU
// scheduling, and from finishing its work after its block answered.
#include "device.h"
#include "scheduling_guard.h"

#include <csignal>
#include <cstring>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace pkbw::engine;

namespace {

// A child that sleeps until killed: the stand-in for the reference's timing worker.
struct SleepingChild {
    pid_t pid = -1;
    SleepingChild() {
        pid = ::fork();
        if (pid == 0) {
            ::pause();
            ::_exit(0);
        }
    }
    ~SleepingChild() {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
};

} // namespace

TEST(SchedulingGuard, AnUntouchedProcessIsLeftAlone) {
    const ThreadScheduling baseline = current_thread_scheduling();
    SleepingChild child;
    const SchedulingRestore found = restore_scheduling(child.pid, baseline);
    EXPECT_EQ(found.threads, 1);
    EXPECT_EQ(found.restored, 0);
    EXPECT_EQ(found.suspicious, 0);
    EXPECT_EQ(found.failed, 0);
    EXPECT_TRUE(found.first.empty()) << found.first;
}

TEST(SchedulingGuard, APinnedWorkerIsSetBackAndSaid) {
    const ThreadScheduling baseline = current_thread_scheduling();
    if (CPU_COUNT(&baseline.affinity) < 2) {
        GTEST_SKIP() << "this process may run on one CPU only: pinning changes nothing";
    }
    SleepingChild child;
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &baseline.affinity)) {
            CPU_SET(cpu, &one);
            break;
        }
    }
    ASSERT_EQ(::sched_setaffinity(child.pid, sizeof one, &one), 0) << std::strerror(errno);
    const SchedulingRestore found = restore_scheduling(child.pid, baseline);
    EXPECT_EQ(found.restored, 1);
    EXPECT_EQ(found.suspicious, 1);
    EXPECT_NE(found.first.find("its main thread had 1 CPU(s) instead of " +
                               std::to_string(CPU_COUNT(&baseline.affinity))),
              std::string::npos)
        << found.first;
    cpu_set_t now;
    ASSERT_EQ(::sched_getaffinity(child.pid, sizeof now, &now), 0);
    EXPECT_TRUE(CPU_EQUAL(&now, &baseline.affinity));
    EXPECT_EQ(restore_scheduling(child.pid, baseline).restored, 0); // nothing left to set back
}

TEST(SchedulingGuard, ALowerPriorityIsSetBackOrSaidToStay) {
    const ThreadScheduling baseline = current_thread_scheduling();
    if (baseline.nice >= 19) {
        GTEST_SKIP() << "this process already runs at nice 19";
    }
    SleepingChild child;
    ASSERT_EQ(::setpriority(PRIO_PROCESS, static_cast<id_t>(child.pid), 19), 0) << std::strerror(errno);
    const SchedulingRestore found = restore_scheduling(child.pid, baseline);
    // Lowering nice again needs CAP_SYS_NICE (or RLIMIT_NICE): root sets it back, a user cannot, and then
    // the change is a failure the run's verdict reads as untrusted timing.
    errno = 0;
    const int nice_now = ::getpriority(PRIO_PROCESS, static_cast<id_t>(child.pid));
    if (found.failed == 0) {
        EXPECT_EQ(found.restored, 1);
        EXPECT_NE(found.first.find("nice 19 instead of " + std::to_string(baseline.nice)), std::string::npos)
            << found.first;
        EXPECT_EQ(nice_now, baseline.nice);
    } else {
        EXPECT_NE(found.failure.find("nice 19 instead of"), std::string::npos) << found.failure;
        EXPECT_NE(found.failure.find("could not be set back"), std::string::npos) << found.failure;
        EXPECT_EQ(nice_now, 19);
    }
}

TEST(SlotScan, EqualBytesAgreeAnyChangedOrMovedWordDoesNotAndUntouchedSlotsAreFound) {
    auto device = make_host_device(0, "/pkbw-test-fingerprint");
    std::vector<std::uint64_t> slots(4096);
    for (std::size_t i = 0; i < slots.size(); ++i) {
        slots[i] = i * 2654435761u;
    }
    const std::size_t bytes = slots.size() * sizeof(std::uint64_t);
    const std::uint64_t first = device->scan_slots(slots.data(), bytes / 4, 4, 0xAB).fingerprint;
    EXPECT_EQ(device->scan_slots(slots.data(), bytes / 4, 4, 0xAB).fingerprint, first);
    slots[4000] ^= 1u << 7; // one bit of one element
    EXPECT_NE(device->scan_slots(slots.data(), bytes / 4, 4, 0xAB).fingerprint, first);
    slots[4000] ^= 1u << 7;
    std::swap(slots[1], slots[2]); // the same words in other places
    EXPECT_NE(device->scan_slots(slots.data(), bytes / 4, 4, 0xAB).fingerprint, first);
    std::swap(slots[1], slots[2]);
    EXPECT_EQ(device->scan_slots(slots.data(), bytes / 4, 4, 0xAB).fingerprint, first);

    // Untouched: every byte of the slot still the poison; one byte written is enough to count as written.
    std::memset(slots.data() + 2 * 1024, 0xAB, bytes / 4);
    EXPECT_EQ(device->scan_slots(slots.data(), bytes / 4, 4, 0xAB).untouched,
              (std::vector<bool>{false, false, true, false}));
    reinterpret_cast<unsigned char*>(slots.data() + 2 * 1024)[5000] = 0;
    EXPECT_EQ(device->scan_slots(slots.data(), bytes / 4, 4, 0xAB).untouched,
              (std::vector<bool>{false, false, false, false}));
}
