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
// A pkbw block as checked_timing.cpp sends it: the judge's clock, the round trip, what the worker reported.
json block(int rank, const std::string& side, double judge, double span, json extra = json::object()) {
    json event = {{"event", "perf_result"}, {"rank", rank},      {"side", side},
                  {"protocol", "pkbw"},     {"judge_ms", judge}, {"round_trip_ms", 0.05},
                  {"span_ms", span},        {"calls", 50},       {"samples_ms", {(judge - 0.05) / 50}}};
    event.update(extra);
    return event;
}
json check(int rank, int block, int failed, const std::string& message = "",
           const std::string& kind = "unwritten", int borderline = 0) {
    return {{"event", "timed_check"},
            {"rank", rank},
            {"block", block},
            {"side", "candidate"},
            {"calls", 50},
            {"failed_calls", failed},
            {"status", failed ? "mismatch" : "pass"},
            {"message", message},
            {"kind", failed ? kind : ""},
            {"borderline_calls", borderline},
            {"borderline_message", borderline ? "call 22 of 50: output: tensors not allclose" : ""}};
}
json plan(int rank, json extra = json::object()) {
    json event = {{"event", "timing_plan"},
                  {"rank", rank},
                  {"calls_per_block", 50},
                  {"pairs", 10},
                  {"checked", true},
                  {"containment", "cgroup v2 (/sys/fs/cgroup/x): frozen and killed as a whole"},
                  {"inputs_note", ""}};
    event.update(extra);
    return event;
}
} // namespace

TEST(TrustReport, AnHonestRunStaysAPassWithNoWarning) {
    Verdict verdict = passed();
    apply_trust_findings(
        verdict,
        {{{"event", "candidate"}, {"rank", 0}, {"stage", "started"}, {"landlock_abi", 7}},
         plan(0, {{"idle_probe_us", 24.0}, {"probe_spin_us", 20.0}}),
         block(0, "reference", 10.4, 10.0,
               {{"frozen_cpu_ms", 0.0},
                {"frozen", true},
                {"probe_before_us", 25.0},
                {"probe_after_us", 26.0},
                {"idle_probe_us", 24.0}}),
         block(0, "candidate", 5.3, 5.1, {{"probe_after_us", 25.0}, {"idle_probe_us", 24.0}}),
         check(0, 1, 0),
         // One block late by scheduling noise: the sums over blocks agree.
         block(0, "candidate", 7.0, 5.1),
         block(0, "candidate", 5.2, 5.1),
         block(0, "candidate", 5.2, 5.1),
         {{"event", "candidate"}, {"rank", 0}, {"stage", "finished"}, {"leftovers", json::array()}}});
    EXPECT_EQ(verdict.status, "pass");
    EXPECT_TRUE(verdict.warnings.empty()) << verdict.warnings[0];
}

TEST(TrustReport, EachFindingMakesThePassInvalidTimingNamingItsRanks) {
    Verdict verdict = passed();
    apply_trust_findings(
        verdict, {check(1, 3, 33, "call 1 of 50: output: tensors not allclose"),
                  block(0, "reference", 10.0, 9.9, {{"frozen_cpu_ms", 40.0}, {"frozen", true}}),
                  block(1, "reference", 10.0, 9.9, {{"frozen", false}}),
                  block(0, "reference", 10.0, 9.9, {{"probe_before_us", 2000.0}, {"idle_probe_us", 24.0}}),
                  block(1, "candidate", 1.0, 0.9, {{"probe_after_us", 900.0}, {"idle_probe_us", 24.0}}),
                  block(0, "candidate", 8.5, 0.2, {{"untouched_at_reply", 61}}),
                  plan(0, {{"idle_probe_us", 5000.0}, {"probe_spin_us", 20.0}})});
    EXPECT_EQ(verdict.status, "invalid_timing");
    EXPECT_EQ(verdict.exit_code, 1);
    const std::string& m = verdict.summary;
    EXPECT_NE(m.find("timing not trusted"), std::string::npos) << m;
    EXPECT_NE(m.find("a timed call's output failed its check in block 3 (33 of 50 calls, the first left "
                     "unwritten): call 1 of 50: output: tensors not allclose (rank(s) 1)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("40.0 ms of CPU while they were frozen"), std::string::npos) << m;
    EXPECT_NE(m.find("could not be frozen while the reference was timed (rank(s) 1)"), std::string::npos)
        << m;
    EXPECT_NE(m.find("took 2000 us around a block of the reference"), std::string::npos) << m;
    EXPECT_NE(m.find("took 900 us after its block returned"), std::string::npos) << m;
    EXPECT_NE(m.find("before timing started"), std::string::npos) << m;
    EXPECT_NE(m.find("answered before its calls had written their outputs: 61 of 50 output slots"),
              std::string::npos)
        << m;
}

TEST(TrustReport, ForgedSamplesAreAWarningAndAFailedRunKeepsItsStatus) {
    // The speedup is the judge's clock: samples that disagree are said, the verdict stands.
    Verdict forged = passed();
    apply_trust_findings(forged, {block(0, "candidate", 10.05, 1.0), block(0, "candidate", 10.05, 1.0)});
    EXPECT_EQ(forged.status, "pass");
    ASSERT_EQ(forged.warnings.size(), 1u);
    EXPECT_NE(forged.warnings[0].find("its per-call samples are not the block's"), std::string::npos);
    EXPECT_NE(forged.warnings[0].find("reported 1.000 ms for a block that took 10.000 ms"), std::string::npos)
        << forged.warnings[0];

    Verdict mismatch = passed();
    mismatch.status = "mismatch";
    apply_trust_findings(mismatch, {check(0, 1, 2, "call 7 of 50: poisoned")});
    EXPECT_EQ(mismatch.status, "mismatch"); // a worse verdict stands; the finding is a warning
    ASSERT_EQ(mismatch.warnings.size(), 1u);
    EXPECT_NE(mismatch.warnings[0].find("timing not trusted"), std::string::npos);
}

TEST(TrustReport, WrongOnFreshInputsIsSaidAsSuchAndABorderlineCallIsAWarning) {
    Verdict wrong = passed();
    apply_trust_findings(wrong, {check(0, 1, 4, "call 2 of 50: output: tensors not allclose", "wrong")});
    EXPECT_EQ(wrong.status, "invalid_timing");
    EXPECT_EQ(wrong.exit_code, 1);
    EXPECT_NE(wrong.summary.find("(4 of 50 calls, the first computed but not allclose on its fresh inputs)"),
              std::string::npos)
        << wrong.summary;

    // A few elements just beyond the tolerance on one call of fifty: an honest kernel's rounding.
    Verdict borderline = passed();
    apply_trust_findings(borderline, {check(0, 1, 0, "", "", 1)});
    EXPECT_EQ(borderline.status, "pass");
    ASSERT_EQ(borderline.warnings.size(), 1u);
    EXPECT_NE(borderline.warnings[0].find("numerically borderline on fresh inputs"), std::string::npos);
    EXPECT_NE(borderline.warnings[0].find("1 of 50 timed calls of block 1"), std::string::npos)
        << borderline.warnings[0];
}

TEST(TrustReport, WhatTheTimingCouldNotCheckIsSaid) {
    Verdict verdict = passed();
    apply_trust_findings(verdict,
                         {plan(0, {{"checked", false}}),
                          plan(1, {{"inputs_note", "this problem's inputs are the same every call"},
                                   {"containment", "signals (no writable cgroup v2: read-only): ..."}})});
    EXPECT_EQ(verdict.status, "pass");
    ASSERT_EQ(verdict.warnings.size(), 3u);
    std::string all;
    for (const auto& w : verdict.warnings)
        all += w + "\n";
    EXPECT_NE(all.find("the timed calls were not checked"), std::string::npos) << all;
    EXPECT_NE(all.find("inputs are the same every call (rank(s) 1)"), std::string::npos) << all;
    EXPECT_NE(all.find("candidate's processes: signals (no writable cgroup v2"), std::string::npos) << all;
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

TEST(TrustReport, OutputsChangedAfterTheReplyUntrustTheTiming) {
    Verdict verdict = passed();
    apply_trust_findings(verdict, {block(1, "candidate", 5.0, 4.9, {{"changed_after_reply", true}}),
                                   block(0, "candidate", 5.0, 4.9, {{"changed_after_reply", false}})});
    EXPECT_EQ(verdict.status, "invalid_timing");
    EXPECT_NE(
        verdict.summary.find("its outputs changed after its block had answered: work the judge's clock did "
                             "not count (rank(s) 1)"),
        std::string::npos)
        << verdict.summary;
}

TEST(TrustReport, ASchedulingChangeSetBackIsAWarningAndOneThatStaysUntrusts) {
    Verdict restored = passed();
    apply_trust_findings(
        restored,
        {plan(0, {{"rescheduled", "the reference's timing worker: its main thread had 1 CPU(s) instead of 2"},
                  {"rescheduled_threads", 1}}),
         block(0, "reference", 10.0, 9.9,
               {{"rescheduled", "the judge: its main thread had nice 19 instead of 0"}})});
    EXPECT_EQ(restored.status, "pass");
    ASSERT_EQ(restored.warnings.size(), 1u); // one line per kind, the first occurrence's text
    EXPECT_NE(restored.warnings[0].find(
                  "another process changed the CPU scheduling of the reference's side (the "
                  "reference's timing worker: its main thread had 1 CPU(s) instead of 2); set "
                  "back before the reference was timed (rank(s) 0)"),
              std::string::npos)
        << restored.warnings[0];

    Verdict stuck = passed();
    apply_trust_findings(stuck,
                         {block(1, "reference", 10.0, 9.9,
                                {{"reschedule_failed", "the reference's timing worker: thread 77 had nice 19 "
                                                       "instead of 0 and could not be set back (Permission "
                                                       "denied)"}})});
    EXPECT_EQ(stuck.status, "invalid_timing");
    EXPECT_NE(stuck.summary.find("could not be set back (Permission denied) (rank(s) 1)"), std::string::npos)
        << stuck.summary;
}

TEST(TrustReport, OneCallDoingABlocksWorkIsAWarning) {
    json batched = json::array();
    json even = json::array();
    for (int k = 0; k < 50; ++k) {
        batched.push_back(k == 0 ? 5.0 : 0.0);
        even.push_back(0.1);
    }
    Verdict lookahead = passed();
    apply_trust_findings(lookahead, {block(0, "candidate", 5.1, 5.0, {{"call_samples_ms", batched}}),
                                     block(0, "candidate", 5.1, 5.0, {{"call_samples_ms", batched}})});
    EXPECT_EQ(lookahead.status, "pass");
    ASSERT_EQ(lookahead.warnings.size(), 1u);
    EXPECT_NE(lookahead.warnings[0].find("candidate: in 2 of 2 blocks one call took most of the block"),
              std::string::npos)
        << lookahead.warnings[0];

    Verdict honest = passed();
    apply_trust_findings(honest, {block(0, "candidate", 5.1, 5.0, {{"call_samples_ms", even}})});
    EXPECT_TRUE(honest.warnings.empty());
}
