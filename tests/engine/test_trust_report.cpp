// The judges' findings about their candidate processes, as the run's verdict reads them.
#include "trust_report.h"

#include <gtest/gtest.h>

using namespace pkbw::cli;
using nlohmann::json;

namespace {
Verdict passed() {
    Verdict verdict;
    verdict.summary = "5 trial(s) match on 2 rank(s)";
    return verdict;
}
json block(int rank, double span, double host, double judge, double whole, double idle_cpu) {
    return {{"event", "perf_result"},  {"rank", rank},        {"side", "candidate"},
            {"protocol", "pkbw"},      {"span_ms", span},     {"host_ms", host},
            {"judge_ms", judge},       {"whole_ms", whole},   {"calls", 100},
            {"idle_cpu_ms", idle_cpu}, {"idle_window_ms", 50}};
}
} // namespace

TEST(TrustReport, AnHonestRunStaysAPassWithNoWarning) {
    Verdict verdict = passed();
    apply_trust_findings(
        verdict,
        {{{"event", "candidate"}, {"rank", 0}, {"stage", "started"}, {"landlock_abi", 7}},
         block(0, 10.0, 10.2, 41.0, 40.0, 1.0), // PKB's warm-up inside whole_ms
         {{"event", "recheck"}, {"rank", 0}, {"variant", "timed_addresses"}, {"status", "pass"}},
         {{"event", "candidate"}, {"rank", 0}, {"stage", "finished"}, {"leftovers", json::array()}}});
    EXPECT_EQ(verdict.status, "pass");
    EXPECT_TRUE(verdict.warnings.empty());
}

TEST(TrustReport, EachFindingMakesThePassInvalidTimingNamingItsRanks) {
    Verdict verdict = passed();
    apply_trust_findings(verdict, {block(0, 0.7, 20.7, 21.0, 21.0, 0.0),
                                   block(1, 0.7, 20.9, 21.5, 21.1, 0.0),
                                   block(1, 5.0, 5.1, 5.5, 5.2, 48.0),
                                   {{"event", "recheck"},
                                    {"rank", 1},
                                    {"variant", "one_element_changed"},
                                    {"status", "mismatch"},
                                    {"message", "output: tensors not allclose"}}});
    EXPECT_EQ(verdict.status, "invalid_timing");
    EXPECT_EQ(verdict.exit_code, 1);
    const std::string& m = verdict.summary;
    EXPECT_NE(m.find("timing not trusted"), std::string::npos) << m;
    EXPECT_NE(m.find("device work ran outside the measured stream (rank(s) 0, 1)"), std::string::npos) << m;
    EXPECT_NE(m.find("work left running on host threads (rank(s) 1)"), std::string::npos) << m;
    EXPECT_NE(
        m.find("re-check after timing failed on its timed inputs with one element changed: output: tensors "
               "not allclose (rank(s) 1)"),
        std::string::npos)
        << m;
}

TEST(TrustReport, AForgedReportIsCaughtByTheJudgesClockAndAFailedRunKeepsItsStatus) {
    Verdict forged = passed();
    apply_trust_findings(forged, {block(0, 0.7, 0.7, 300.0, 0.8, 0.0)});
    EXPECT_EQ(forged.status, "invalid_timing");
    EXPECT_NE(forged.summary.find("the reported times are not the block's"), std::string::npos);

    Verdict mismatch = passed();
    mismatch.status = "mismatch";
    apply_trust_findings(mismatch, {block(0, 0.7, 20.7, 21.0, 21.0, 0.0)});
    EXPECT_EQ(mismatch.status, "mismatch"); // a worse verdict stands; the finding is a warning
    ASSERT_EQ(mismatch.warnings.size(), 1u);
    EXPECT_NE(mismatch.warnings[0].find("timing not trusted"), std::string::npos);
}

TEST(TrustReport, NoSandboxAndLeftoversAreWarnings) {
    Verdict verdict = passed();
    apply_trust_findings(verdict, {{{"event", "candidate"},
                                    {"rank", 0},
                                    {"stage", "started"},
                                    {"landlock_abi", 0},
                                    {"sandbox", "no filesystem sandbox (the kernel has no Landlock)"}},
                                   {{"event", "candidate"},
                                    {"rank", 1},
                                    {"stage", "finished"},
                                    {"leftovers", {{{"pid", 4242}, {"command", "sleep 600"}}}}}});
    EXPECT_EQ(verdict.status, "pass");
    ASSERT_EQ(verdict.warnings.size(), 2u);
    EXPECT_EQ(verdict.warnings[0], "sandbox: no filesystem sandbox (the kernel has no Landlock) (rank(s) 0)");
    EXPECT_EQ(verdict.warnings[1],
              "left 1 process(es) running after the run, killed: pid 4242 (sleep 600) on rank 1");
}

TEST(TrustReport, AForkBombIsCountedWholeAndWhatEscapedIsNamed) {
    Verdict verdict = passed();
    apply_trust_findings(
        verdict, {{{"event", "candidate"},
                   {"rank", 1},
                   {"stage", "finished"},
                   {"containment", "signals (no writable cgroup v2: test): ..."},
                   {"leftovers", {{{"pid", 10}, {"command", "bomb"}}, {{"pid", 11}, {"command", "bomb"}}}},
                   {"leftover_count", 40},
                   {"killed_groups", {77}},
                   {"escaped", {{{"pid", 12}, {"command", "bomb"}}}}}});
    EXPECT_EQ(verdict.status, "pass"); // the candidate's answer stands; what it left is reported
    ASSERT_EQ(verdict.warnings.size(), 2u);
    EXPECT_EQ(verdict.warnings[0], "left 40 process(es) running after the run, killed: pid 10 (bomb) on rank "
                                   "1, pid 11 (bomb) on rank 1, "
                                   "process group 77 on rank 1");
    EXPECT_EQ(
        verdict.warnings[1],
        "the candidate's processes could not all be killed: 1 still running after the run: pid 12 (bomb) "
        "on rank 1");
}
