#include "pkbw/core/timing_checks.h"

#include <gtest/gtest.h>

using namespace pkbw;

TEST(TimingChecks, UntimedDeviceWorkIsFlaggedOnlyBeyondLaunchAndSyncAllowance) {
    // An honest block: the device-wide sync returns right after the last mark.
    EXPECT_FALSE(untimed_device_work({10.0, 10.3, 100}));
    // Tiny blocks have a fixed allowance for the first launch and the final synchronisation.
    EXPECT_FALSE(untimed_device_work({0.05, 0.05 + kUntimedAllowanceMs * 0.9, 100}));
    // 200 us of side-stream work per call, 100 calls, timed at 7 us each (the measurement).
    const auto finding = untimed_device_work({0.7, 20.7, 100});
    ASSERT_TRUE(finding);
    EXPECT_NE(finding->find("outside the measured stream"), std::string::npos);
    EXPECT_NE(finding->find("20.700 ms"), std::string::npos);
    // The allowance grows with the span (10%), so long honest blocks are not flagged for jitter.
    EXPECT_FALSE(untimed_device_work({1000.0, 1000.0 + 0.09 * 1000.0 + kUntimedAllowanceMs, 100}));
    EXPECT_TRUE(untimed_device_work({1000.0, 1000.0 + 0.11 * 1000.0 + kUntimedAllowanceMs, 100}));
}

TEST(TimingChecks, CpuAfterReturnIsFlaggedAboveAQuarterCore) {
    EXPECT_FALSE(work_after_return(0.0, 50.0));
    EXPECT_FALSE(work_after_return(kIdleCpuAllowanceMs + 0.2 * 50.0, 50.0));
    const auto finding = work_after_return(48.0, 50.0);
    ASSERT_TRUE(finding);
    EXPECT_NE(finding->find("48.0 ms of CPU in the 50 ms"), std::string::npos);
}

TEST(TimingChecks, TheJudgesClockMustConfirmTheReportedBlockTime) {
    EXPECT_FALSE(judge_clock_disagrees(21.0, 20.0));
    EXPECT_FALSE(judge_clock_disagrees(0.5 + kJudgeAllowanceMs, 0.5)); // a short block, a slow round trip
    // A candidate that reports 0.7 ms for a block that kept the judge waiting 300 ms.
    const auto finding = judge_clock_disagrees(300.0, 0.7);
    ASSERT_TRUE(finding);
    EXPECT_NE(finding->find("not the block's"), std::string::npos);
}
