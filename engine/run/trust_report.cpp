#include "trust_report.h"

#include "pkbw/core/protocol.h"
#include "pkbw/core/status.h"
#include "pkbw/core/timing_checks.h"

#include <algorithm>
#include <map>
#include <set>

namespace pkbw::cli {

using nlohmann::json;

namespace {

std::string rank_list(const std::set<int>& ranks) {
    std::string text;
    for (int r : ranks) {
        text += (text.empty() ? "" : ", ") + std::to_string(r);
    }
    return text;
}

// One line per kind of finding: its first occurrence's text and every rank that showed it.
class Findings {
public:
    void note(const std::string& kind, const std::string& finding, int rank) {
        auto& slot = by_kind_[kind];
        if (slot.first.empty()) {
            slot.first = finding;
        }
        slot.second.insert(rank);
    }
    std::vector<std::string> lines(const std::string& who) const {
        std::vector<std::string> out;
        for (const auto& [kind, entry] : by_kind_) {
            out.push_back(who + entry.first + " (rank(s) " + rank_list(entry.second) + ")");
        }
        return out;
    }

private:
    std::map<std::string, std::pair<std::string, std::set<int>>> by_kind_;
};

// What the judge's scheduling guard found before the calibration or a reference block
// (engine/runtime/scheduling_guard.h): a change it set back is said; one it could not, untrusts.
void check_scheduling(const json& event, int rank, Findings& invalid, Findings& warnings) {
    if (event.contains("rescheduled")) {
        warnings.note("rescheduled",
                      "timing: another process changed the CPU scheduling of the reference's side (" +
                          event.value("rescheduled", std::string()) +
                          "); set back before the reference was timed",
                      rank);
    }
    if (event.contains("reschedule_failed")) {
        invalid.note("reschedule_failed",
                     "the CPU scheduling of the reference's side was changed: " +
                         event.value("reschedule_failed", std::string()),
                     rank);
    }
}

// A block's per-call samples, as its worker reported them.
std::vector<double> call_samples(const json& event) {
    std::vector<double> samples;
    for (const auto& sample : event.value("call_samples_ms", json::array())) {
        if (sample.is_number()) {
            samples.push_back(sample.get<double>());
        }
    }
    return samples;
}

// The candidate's blocks of one rank, as reported.
struct CandidateBlocks {
    std::vector<ReportedBlock> reported;
    std::vector<std::vector<double>> samples;
};

// A pkbw block's measurements (engine/runtime/checked_timing.cpp) against core/timing_checks.h.
void check_block(const json& event, int rank, Findings& invalid, Findings& warnings,
                 std::map<int, CandidateBlocks>& candidate_blocks) {
    const std::string side = event.value("side", "");
    const double idle = event.value("idle_probe_us", 0.0);
    if (side == "candidate") {
        if (event.contains("judge_ms") && event.contains("span_ms")) {
            candidate_blocks[rank].reported.push_back({event.value("span_ms", 0.0),
                                                       event.value("judge_ms", 0.0),
                                                       event.value("round_trip_ms", 0.0)});
        }
        if (event.value("protocol", "") == "pkbw") { // a graph block has no per-call samples
            candidate_blocks[rank].samples.push_back(call_samples(event));
        }
        if (event.value("changed_after_reply", false)) {
            invalid.note(
                "late",
                "its outputs changed after its block had answered: work the judge's clock did not count",
                rank);
        }
        if (const int untouched = event.value("untouched_at_reply", 0); untouched > 0) {
            invalid.note("early",
                         "its block answered before its calls had written their outputs: " +
                             std::to_string(untouched) + " of " + std::to_string(event.value("calls", 0)) +
                             " output slots were untouched when it answered",
                         rank);
        }
        if (event.contains("probe_after_us")) {
            if (const auto finding =
                    gpu_busy(event.value("probe_after_us", 0.0), idle, "after its block returned")) {
                invalid.note("gpu_after", *finding + ": device work outside its measured time", rank);
            }
        }
        return;
    }
    if (side != "reference") {
        return;
    }
    check_scheduling(event, rank, invalid, warnings);
    if (event.contains("frozen") && !event.value("frozen", true)) {
        invalid.note("unfrozen", "its processes could not be frozen while the reference was timed", rank);
    }
    if (event.contains("frozen_cpu_ms")) {
        if (const auto finding = cpu_while_frozen(event.value("frozen_cpu_ms", 0.0))) {
            invalid.note("frozen_cpu", *finding, rank);
        }
    }
    for (const char* field : {"probe_before_us", "probe_after_us"}) {
        if (event.contains(field)) {
            if (const auto finding =
                    gpu_busy(event.value(field, 0.0), idle, "around a block of the reference")) {
                invalid.note("gpu_reference", *finding + ", which may have slowed the reference", rank);
            }
        }
    }
}

// A timed_check event (checked_timing.cpp check_pair): a call left unwritten or wrong on its fresh
// inputs makes the timing untrusted (the time is not the work's); a few elements just beyond the
// tolerance on some calls, as an honest kernel's order of summation gives, are said.
void check_calls(const json& event, int rank, Findings& invalid, Findings& warnings) {
    const std::string block = std::to_string(event.value("block", -1));
    const std::string calls = std::to_string(event.value("calls", 0));
    const int failed = event.value("failed_calls", 0);
    if (failed > 0 ||
        (event.value("status", "") != status::kPass && event.value("status", "") != status::kUnchecked)) {
        const std::string kind = event.value("kind", "");
        const std::string how = kind == "wrong" ? ", the first computed but not allclose on its fresh inputs"
                                : kind == "unwritten" ? ", the first left unwritten"
                                                      : "";
        invalid.note("check",
                     "a timed call's output failed its check in block " + block + " (" +
                         std::to_string(failed) + " of " + calls + " calls" + how +
                         "): " + event.value("message", std::string()),
                     rank);
    }
    if (event.value("borderline_calls", 0) > 0) {
        warnings.note("borderline",
                      "numerically borderline on fresh inputs: a few elements beyond the tolerance in " +
                          std::to_string(event.value("borderline_calls", 0)) + " of " + calls +
                          " timed calls of block " + block + " (" +
                          event.value("borderline_message", std::string()) + ")",
                      rank);
    }
}

void check_plan(const json& event, int rank, Findings& invalid, Findings& warnings) {
    if (!event.value("checked", true)) {
        warnings.note("unchecked",
                      "timing: the timed calls were not checked and the round trip not calibrated (one side "
                      "only: no reference to check against)",
                      rank);
    }
    const std::string note = event.value("inputs_note", "");
    if (!note.empty()) {
        warnings.note("inputs", "timing: " + note, rank);
    }
    const std::string containment = event.value("containment", "");
    if (containment.rfind("signals", 0) == 0) {
        warnings.note("containment", "candidate's processes: " + containment, rank);
    }
    check_scheduling(event, rank, invalid, warnings);
    if (event.contains("idle_probe_us")) {
        const double spin = event.value("probe_spin_us", 0.0);
        if (const auto finding = gpu_busy(event.value("idle_probe_us", 0.0), spin, "before timing started")) {
            invalid.note("gpu_start", *finding, rank);
        }
    }
}

// "pid P (command) on rank R", from a `candidate` event's process entry.
std::string process_text(const json& process, int rank) {
    return "pid " + std::to_string(process.value("pid", 0)) + " (" +
           process.value("command", std::string("?")) + ") on rank " + std::to_string(rank);
}

} // namespace

void apply_trust_findings(Verdict& verdict, const std::vector<json>& events) {
    std::map<std::string, std::set<int>> unsandboxed; // why -> ranks
    std::vector<std::string> leftovers, escaped;
    std::size_t leftover_count = 0; // a fork bomb's events name a few and count all
    Findings invalid, warnings;
    std::map<int, CandidateBlocks> candidate_blocks; // by rank
    for (const auto& event : events) {
        const std::string name = event.value("event", "");
        const int rank = event.value("rank", -1);
        if (name == protocol::kCandidate && event.value("stage", "") == "started" &&
            event.value("landlock_abi", 0) == 0) {
            unsandboxed[event.value("sandbox", std::string("no sandbox"))].insert(rank);
        } else if (name == protocol::kCandidate && event.value("stage", "") == "finished") {
            const json named = event.value("leftovers", json::array());
            for (const auto& process : named) {
                leftovers.push_back(process_text(process, rank));
            }
            // Killed whole where a scan could not name their processes (the signals fallback).
            for (const auto& group : event.value("killed_groups", json::array())) {
                if (group.is_number_integer()) {
                    leftovers.push_back("process group " + std::to_string(group.get<long long>()) +
                                        " on rank " + std::to_string(rank));
                }
            }
            leftover_count += std::max<std::size_t>(named.size(), event.value("leftover_count", 0));
            for (const auto& process : event.value("escaped", json::array())) {
                escaped.push_back(process_text(process, rank));
            }
        } else if (name == protocol::kTimedCheck && event.value("status", "") == status::kUnchecked) {
            warnings.note("unchecked_calls", "timing: " + event.value("message", std::string("not checked")),
                          rank);
        } else if (name == protocol::kTimedCheck) {
            check_calls(event, rank, invalid, warnings);
        } else if (name == protocol::kTimingPlan) {
            check_plan(event, rank, invalid, warnings);
        } else if (name == protocol::kPerfResult &&
                   (event.value("protocol", "") == "pkbw" || event.value("protocol", "") == "graph")) {
            check_block(event, rank, invalid, warnings, candidate_blocks);
        }
    }
    for (const auto& [rank, blocks] : candidate_blocks) {
        if (const auto finding = samples_disagree(blocks.reported)) {
            warnings.note("samples", "candidate: " + *finding, rank);
        }
        if (const auto finding = one_call_holds_the_block(blocks.samples)) {
            warnings.note("one_call", "candidate: " + *finding, rank);
        }
    }
    for (const auto& [why, ranks] : unsandboxed) {
        add_warning(verdict, "sandbox: " + why + " (rank(s) " + rank_list(ranks) + ")");
    }
    if (leftover_count > 0) {
        std::string text =
            "left " + std::to_string(leftover_count) + " process(es) running after the run, killed:";
        for (std::size_t i = 0; i < leftovers.size() && i < 8; ++i) {
            text += (i ? ", " : " ") + leftovers[i];
        }
        add_warning(verdict, text);
    }
    if (!escaped.empty()) {
        std::string text =
            "the candidate's processes could not all be killed: " + std::to_string(escaped.size()) +
            " still running after the run:";
        for (std::size_t i = 0; i < escaped.size() && i < 8; ++i) {
            text += (i ? ", " : " ") + escaped[i];
        }
        add_warning(verdict, text);
    }
    for (const auto& line : warnings.lines("")) {
        add_warning(verdict, line);
    }
    const auto failures = invalid.lines("candidate: ");
    if (failures.empty()) {
        return;
    }
    std::string message = "timing not trusted: ";
    for (std::size_t i = 0; i < failures.size(); ++i) {
        message += (i ? "; " : "") + failures[i];
    }
    if (verdict.status == status::kPass) {
        verdict.status = std::string(status::kInvalidTiming);
        verdict.exit_code = 1;
        const std::size_t warnings_at = verdict.summary.find("; warning");
        verdict.summary =
            message + (warnings_at == std::string::npos ? "" : verdict.summary.substr(warnings_at));
    } else {
        add_warning(verdict, message);
    }
}

} // namespace pkbw::cli
