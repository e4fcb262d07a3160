// Where a rank's judge and workers run while blocks are timed (engine/runtime/cpu_placement.h), the
// channel's polling receive (channel.h), and the scheduling guard's view of a pinned main thread.
#include "channel.h"
#include "cpu_placement.h"
#include "scheduling_guard.h"

#include <chrono>
#include <csignal>
#include <gtest/gtest.h>
#include <numeric>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace pkbw::engine;

namespace {

std::vector<int> cpus(int n) {
    std::vector<int> list(static_cast<std::size_t>(n));
    std::iota(list.begin(), list.end(), 0);
    return list;
}

} // namespace

TEST(CpuPlacement, EachRankGetsAJudgeCoreAndAWorkerCoreFromTheEnd) {
    const CpuPlacement zero = plan_cpu_placement(true, 0, 2, cpus(16), "on");
    EXPECT_TRUE(zero.spin);
    EXPECT_EQ(zero.judge_cpu, 15);
    EXPECT_EQ(zero.worker_cpu, 14);
    const CpuPlacement one = plan_cpu_placement(true, 1, 2, cpus(16), "on");
    EXPECT_EQ(one.judge_cpu, 13);
    EXPECT_EQ(one.worker_cpu, 12);
    EXPECT_NE(zero.description.find("CPU 15"), std::string::npos) << zero.description;
    // The allowed list need not be contiguous: the cores are taken from it, not counted.
    const CpuPlacement sparse = plan_cpu_placement(true, 0, 1, {2, 5, 9, 11}, "on");
    EXPECT_EQ(sparse.judge_cpu, 11);
    EXPECT_EQ(sparse.worker_cpu, 9);
}

TEST(CpuPlacement, TooFewCoresTheHostBackendOrTheDefaultLeaveEverythingAsStarted) {
    for (const CpuPlacement& p : {plan_cpu_placement(true, 0, 2, cpus(5), "on"),   // 2 x 2 + 2 needed
                                  plan_cpu_placement(false, 0, 1, cpus(64), "on"), // the host backend
                                  plan_cpu_placement(true, 0, 1, cpus(64), ""),    // the default
                                  plan_cpu_placement(true, 0, 1, cpus(64), "off")}) {
        EXPECT_FALSE(p.spin) << p.description;
        EXPECT_EQ(p.judge_cpu, -1);
        EXPECT_EQ(p.worker_cpu, -1);
        EXPECT_FALSE(p.description.empty());
    }
    EXPECT_NE(plan_cpu_placement(true, 0, 2, cpus(5), "on").description.find("needs 6"), std::string::npos);
    const CpuPlacement spin_only = plan_cpu_placement(true, 0, 1, cpus(8), "spin");
    EXPECT_TRUE(spin_only.spin);
    EXPECT_EQ(spin_only.judge_cpu, -1);
    EXPECT_EQ(spin_only.worker_cpu, -1);
}

TEST(CpuPlacement, AScopedPinHoldsTheThreadToOneCpuAndGivesItsAffinityBack) {
    const std::vector<int> before = allowed_cpus();
    ASSERT_FALSE(before.empty());
    {
        const ScopedPin pin(before.back());
        ASSERT_TRUE(pin.failure().empty()) << pin.failure();
        EXPECT_EQ(allowed_cpus(), std::vector<int>{before.back()});
    }
    EXPECT_EQ(allowed_cpus(), before);
    const ScopedPin nothing(-1);
    EXPECT_EQ(allowed_cpus(), before);
}

TEST(ChannelSpin, APolledReceiveGetsTheMessageAndTheTimeoutStillHolds) {
    auto [mine, theirs_fd] = Channel::make_pair();
    Channel theirs(theirs_fd);
    mine.set_spin(1000);
    // Nothing sent: the polls run out, then the timeout ends the wait, and the channel is not closed.
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(mine.receive(nullptr, 50).has_value());
    EXPECT_FALSE(mine.closed());
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(40));
    // Sent while it polls, and sent while it sleeps after its polls: both arrive whole.
    std::thread sender([&theirs] {
        theirs.send({{"msg", "first"}});
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        theirs.send({{"msg", "second"}, {"n", 7}});
    });
    const auto first = mine.receive();
    const auto second = mine.receive();
    sender.join();
    ASSERT_TRUE(first && second);
    EXPECT_EQ(first->at("msg"), "first");
    EXPECT_EQ(second->at("n"), 7);
    // The peer gone: a polled receive reports it closed, as a sleeping one does.
    { Channel gone(std::move(theirs)); }
    EXPECT_FALSE(mine.receive().has_value());
    EXPECT_TRUE(mine.closed());
}

TEST(SchedulingGuard, AMainThreadPinnedByTheJudgeIsHeldToItsPin) {
    const ThreadScheduling baseline = current_thread_scheduling();
    const std::vector<int> allowed = allowed_cpus();
    if (allowed.size() < 2) {
        GTEST_SKIP() << "this process may run on one CPU only: pinning changes nothing";
    }
    const pid_t child = ::fork();
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    ASSERT_TRUE(pin_thread(child, allowed.back()).empty());
    // Pinned where the judge pinned it: nothing to set back, nothing said.
    SchedulingRestore found = restore_scheduling(child, baseline, allowed.back());
    EXPECT_EQ(found.restored, 0) << found.first;
    // Moved to another CPU (what a candidate could do to the reference's worker): set back to the pin.
    ASSERT_TRUE(pin_thread(child, allowed.front()).empty());
    found = restore_scheduling(child, baseline, allowed.back());
    EXPECT_EQ(found.restored, 1);
    EXPECT_EQ(found.suspicious, 1);
    cpu_set_t now;
    ASSERT_EQ(::sched_getaffinity(child, sizeof now, &now), 0);
    EXPECT_EQ(CPU_COUNT(&now), 1);
    EXPECT_TRUE(CPU_ISSET(allowed.back(), &now));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
}
