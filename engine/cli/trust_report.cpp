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
    std::vector<std::string> timing_failures;
    // One line per kind of finding: its first occurrence's text and every rank that showed it.
    std::map<std::string, std::pair<std::string, std::set<int>>> timing_by_kind;
    auto note = [&](const std::string& kind, const std::string& finding, int rank) {
        auto& slot = timing_by_kind[kind];
        if (slot.first.empty()) {
            slot.first = finding;
        }
        slot.second.insert(rank);
    };
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
        } else if (name == protocol::kRecheck && event.value("status", "") != status::kPass) {
            const std::string variant = event.value("variant", "");
            const std::string where =
                variant == "timed_addresses"       ? "on new inputs at the addresses it was timed on"
                : variant == "one_element_changed" ? "on its timed inputs with one element changed"
                                                   : "on new inputs at new addresses";
            note("recheck " + variant,
                 "re-check after timing failed " + where + ": " + event.value("message", ""), rank);
        } else if (name == protocol::kPerfResult && event.value("side", "") == "candidate") {
            const BlockBracket bracket{event.value("span_ms", 0.0), event.value("host_ms", 0.0),
                                       event.value("calls", 0)};
            if (event.contains("host_ms")) {
                if (const auto finding = untimed_device_work(bracket)) {
                    note("untimed", *finding, rank);
                }
            }
            if (event.contains("judge_ms")) {
                // The whole request (warm-up and barrier included), not only its timed part.
                const double reported = event.value("whole_ms", event.value("host_ms", 0.0));
                if (const auto finding = judge_clock_disagrees(event.value("judge_ms", 0.0), reported)) {
                    note("judge_clock", *finding, rank);
                }
            }
            if (event.contains("idle_cpu_ms")) {
                if (const auto finding = work_after_return(event.value("idle_cpu_ms", 0.0),
                                                           event.value("idle_window_ms", 0.0))) {
                    note("after_return", *finding, rank);
                }
            }
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
    for (const auto& [kind, entry] : timing_by_kind) {
        timing_failures.push_back("candidate: " + entry.first + " (rank(s) " + rank_list(entry.second) + ")");
    }
    if (timing_failures.empty()) {
        return;
    }
    std::string message = "timing not trusted: ";
    for (std::size_t i = 0; i < timing_failures.size(); ++i) {
        message += (i ? "; " : "") + timing_failures[i];
    }
    if (verdict.status == status::kPass) {
        verdict.status = std::string(status::kInvalidTiming);
        verdict.exit_code = 1;
        const std::size_t warnings = verdict.summary.find("; warning");
        verdict.summary = message + (warnings == std::string::npos ? "" : verdict.summary.substr(warnings));
    } else {
        add_warning(verdict, message);
    }
}

} // namespace pkbw::cli
