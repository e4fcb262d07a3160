#include "run_report.h"

#include "pkbw/core/status.h"
#include "pkbw/core/store.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <ostream>
#include <vector>

namespace pkbw::cli {
namespace {

std::string format_number(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.4g", value);
    return buffer;
}

// One line about a tensor that failed: PKB's message when the rank sent one, else the statistics.
std::string tensor_line(const nlohmann::json& tensor) {
    std::string name = json_text(tensor, "name", "output");
    std::string line = name + ": ";
    // A variable-length output whose lengths disagree (or one out of range): core's message names both.
    if (tensor.contains("length_bound") &&
        tensor.value("ref_length", nlohmann::json()) != tensor.value("cand_length", nlohmann::json())) {
        return json_text(tensor, "message", line + "lengths differ");
    }
    if (!tensor.value("shape_match", true)) {
        return line + "shape mismatch " + tensor.value("ref_shape", nlohmann::json::array()).dump() + " vs " +
               tensor.value("cand_shape", nlohmann::json::array()).dump();
    }
    line += std::to_string(tensor.value("mismatch_count", std::int64_t{0})) + "/" +
            std::to_string(tensor.value("numel", std::int64_t{0})) + " mismatched";
    auto number = [&](const char* key) -> std::string {
        auto it = tensor.find(key);
        return it != tensor.end() && it->is_number() ? format_number(it->get<double>()) : "-";
    };
    // NaN and Inf mismatches have no finite difference: max_abs and max_rel cover the finite pairs only,
    // and the worst ratio is infinite (JSON carries it as null). Said, not shown as "max_abs 0 ... -".
    const auto nonfinite = [&](const char* side) -> std::int64_t {
        const auto summary = tensor.find(side);
        if (summary == tensor.end() || !summary->is_object())
            return 0;
        return summary->value("nan_count", std::int64_t{0}) + summary->value("inf_count", std::int64_t{0});
    };
    const std::int64_t extra_nonfinite = nonfinite("cand_summary") - nonfinite("ref_summary");
    const std::string worst = number("worst_ratio");
    line += ", max_abs " + number("max_abs_error") + ", max_rel " + number("max_rel_error") +
            ", worst ratio " + (worst == "-" && extra_nonfinite > 0 ? std::string("inf") : worst);
    if (extra_nonfinite > 0)
        line += " (" + std::to_string(extra_nonfinite) +
                " NaN or Inf more than the reference's; max_abs and max_rel are over finite pairs)";
    // The judge's tie report (protocol "ties"), marked as pkbw show marks it.
    if (auto ties = tensor.find("ties");
        ties != tensor.end() && ties->is_object() && ties->value("classified", false))
        line += ties->value("explained", false) ? "  [tie-explained]" : "  [not tie-explained]";
    return line;
}

std::string first_error(const nlohmann::json& result) {
    std::string message = json_text(result, "message");
    if (!message.empty())
        return message;
    for (const auto& tensor : result.value("tensors", nlohmann::json::array())) {
        if (!tensor.value("pass", true)) {
            std::string text = json_text(tensor, "message");
            return text.empty() ? tensor_line(tensor) : text;
        }
    }
    return {};
}

std::string trial_status(const std::map<int, nlohmann::json>& ranks) {
    std::string status(status::kPass);
    for (const auto& [rank, result] : ranks)
        status = worse_status(status, json_text(result, "status", std::string(status::kError)));
    return status;
}

} // namespace

std::string json_text(const nlohmann::json& body, const char* key, const std::string& fallback) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null())
        return fallback;
    return it->is_string() ? it->get<std::string>() : it->dump();
}

int status_severity(const std::string& status) {
    // core/status.h's rank statuses, then the run's own; invalid_timing only ever replaces a pass.
    static const std::vector<std::string> order = {
        std::string(status::kPass),     std::string(status::kInvalidTiming),
        std::string(status::kMismatch), std::string(status::kInvalidOutput),
        std::string(status::kError),    std::string(to_string(RunStatus::CompileError))};
    if (status == status::kCrash || status == to_string(RunStatus::Timeout) ||
        status == to_string(RunStatus::Interrupted))
        return 10;
    auto found = std::find(order.begin(), order.end(), status);
    return found == order.end() ? 3 : static_cast<int>(found - order.begin()); // unknown: error
}

const std::string& worse_status(const std::string& a, const std::string& b) {
    return status_severity(b) > status_severity(a) ? b : a;
}

namespace {

// The verdict of a launch that did not complete (a timeout, a crash, an environment or internal
// error, an interruption); nullopt when every rank exited 0.
std::optional<Verdict> launch_verdict(const LaunchOutcome& launch, Verdict verdict) {
    switch (launch.end) {
    case LaunchEnd::Timeout:
        verdict.status = to_string(RunStatus::Timeout);
        verdict.exit_code = 1;
        break;
    case LaunchEnd::Crash:
        verdict.status = status::kCrash;
        verdict.exit_code = 1;
        break;
    case LaunchEnd::EnvironmentError:
    case LaunchEnd::SpawnFailed:
        verdict.status = status::kError;
        verdict.exit_code = 3;
        break;
    case LaunchEnd::InternalError:
        verdict.status = status::kError;
        verdict.exit_code = 1;
        break;
    case LaunchEnd::Interrupted:
        verdict.status = to_string(RunStatus::Interrupted);
        verdict.exit_code = 130;
        break;
    case LaunchEnd::Completed:
        return std::nullopt;
    }
    verdict.summary = launch.message;
    return verdict;
}

// Why the results are incomplete ("" when they are not): a trial every rank ran must have a result
// from each; ranks stop together after the first failing trial (unless all_trials), so the trials
// after it are dropped from `verdict`.
std::string missing_result(Verdict& verdict, int world_size, int expected_trials, bool all_trials) {
    for (int trial = 0; trial < expected_trials; ++trial) {
        auto found = verdict.trials.find(trial);
        if (found == verdict.trials.end()) {
            bool stopped_early =
                !all_trials && trial > 0 && trial_status(verdict.trials[trial - 1]) != status::kPass;
            verdict.trials.erase(trial);
            if (stopped_early)
                return "";
            return "no rank reported a result for trial " + std::to_string(trial);
        }
        for (int rank = 0; rank < world_size; ++rank) {
            if (!found->second.count(rank))
                return "rank " + std::to_string(rank) + " reported no result for trial " +
                       std::to_string(trial);
        }
    }
    return "";
}

// PKB only warns about failures in process-group teardown: once every rank has reported every trial,
// a rank failing (or hanging) in teardown does not change the verdict.
bool failed_in_teardown_only(const LaunchOutcome& launch) {
    bool teardown_only = launch.end != LaunchEnd::Completed && launch.end != LaunchEnd::Interrupted &&
                         launch.end != LaunchEnd::SpawnFailed && !launch.culprit_ranks.empty();
    for (int rank : launch.culprit_ranks) {
        const auto& phase = launch.ranks.at(static_cast<std::size_t>(rank)).phase;
        teardown_only = teardown_only && (phase == status::kPhaseTeardown || phase == "exit");
    }
    return teardown_only;
}

} // namespace

Verdict decide(const LaunchOutcome& launch, const std::map<std::pair<int, int>, nlohmann::json>& results,
               int world_size, int expected_trials, bool all_trials) {
    Verdict verdict;
    for (const auto& [key, body] : results)
        verdict.trials[key.first][key.second] = body;
    if (failed_in_teardown_only(launch)) { // decided as completed, the failure noted
        LaunchOutcome completed = launch;
        completed.end = LaunchEnd::Completed;
        Verdict decided = decide(completed, results, world_size, expected_trials, all_trials);
        add_warning(decided, launch.message.substr(0, launch.message.find('\n')));
        return decided;
    }
    if (auto ended = launch_verdict(launch, verdict))
        return *ended;
    // Every rank exited 0: the verdict is in the results.
    if (const std::string missing = missing_result(verdict, world_size, expected_trials, all_trials);
        !missing.empty()) {
        verdict.status = status::kError;
        verdict.exit_code = 1;
        verdict.summary = missing;
        return verdict;
    }
    int failing_trial = -1;
    for (const auto& [trial, ranks] : verdict.trials) {
        std::string status = trial_status(ranks);
        if (status_severity(status) > status_severity(verdict.status)) {
            verdict.status = status;
            failing_trial = trial;
        }
    }
    if (verdict.status == status::kPass) {
        verdict.summary = std::to_string(verdict.trials.size()) + " trial(s) match on " +
                          std::to_string(world_size) + " rank(s)";
        for (const auto& warning : output_statistics_warnings(verdict))
            add_warning(verdict, warning);
        return verdict;
    }
    verdict.exit_code = 1;
    for (const auto& [rank, result] : verdict.trials[failing_trial]) {
        if (json_text(result, "status") == verdict.status) {
            verdict.summary = "trial " + std::to_string(failing_trial) + " rank " + std::to_string(rank) +
                              ": " + verdict.status;
            std::string error = first_error(result);
            if (!error.empty())
                verdict.summary += ": " + error;
            break;
        }
    }
    // An error or invalid output already says what is wrong; the statistics explain a mismatch.
    if (verdict.status == status::kMismatch) {
        for (const auto& warning : output_statistics_warnings(verdict))
            add_warning(verdict, warning);
    }
    return verdict;
}

void add_warning(Verdict& verdict, const std::string& warning) {
    verdict.warnings.push_back(warning);
    verdict.summary += "; warning: " + warning;
}

std::vector<std::string> output_statistics_warnings(const Verdict& verdict) {
    struct Finding {
        std::vector<int> ranks;
        std::int64_t count = 0;           // NaN elements, summed
        std::int64_t reference_count = 0; // the reference's NaN elements on the same ranks, summed
        std::string value;                // the constant
    };
    std::map<std::pair<std::string, std::string>, Finding> findings; // (output, kind) -> where
    for (const auto& [trial, ranks] : verdict.trials) {
        for (const auto& [rank, result] : ranks) {
            const auto tensors = result.value("tensors", nlohmann::json::array());
            if (!tensors.is_array())
                continue;
            for (const auto& tensor : tensors) {
                const auto cand = tensor.value("cand_summary", nlohmann::json::object());
                const auto ref = tensor.value("ref_summary", nlohmann::json::object());
                if (!cand.is_object() || !ref.is_object())
                    continue;
                const std::string name = json_text(tensor, "name", "output");
                auto note = [&](const std::string& kind) -> Finding& {
                    Finding& f = findings[{name, kind}];
                    if (std::find(f.ranks.begin(), f.ranks.end(), rank) == f.ranks.end())
                        f.ranks.push_back(rank);
                    return f;
                };
                const auto flag = [](const nlohmann::json& s, const char* key) {
                    const auto it = s.find(key);
                    return it != s.end() && it->is_boolean() && it->get<bool>();
                };
                const auto count = [](const nlohmann::json& s, const char* key) {
                    const auto it = s.find(key);
                    return it != s.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
                };
                if (flag(cand, "all_zero") && !flag(ref, "all_zero")) {
                    note("all zero");
                } else if (flag(cand, "constant") && !flag(ref, "constant")) {
                    const auto min = cand.find("min");
                    note("constant").value =
                        min != cand.end() && min->is_number() ? format_number(min->get<double>()) : "?";
                }
                if (count(cand, "nan_count") > count(ref, "nan_count")) {
                    Finding& nan = note("NaN");
                    nan.count += count(cand, "nan_count");
                    nan.reference_count += count(ref, "nan_count");
                }
            }
        }
    }
    std::vector<std::string> warnings;
    for (auto& [key, finding] : findings) {
        std::sort(finding.ranks.begin(), finding.ranks.end());
        std::string ranks;
        for (int r : finding.ranks)
            ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
        const std::string where = " on rank" + std::string(finding.ranks.size() > 1 ? "s " : " ") + ranks +
                                  " where the reference's";
        const auto& [name, kind] = key;
        if (kind == "all zero")
            warnings.push_back("candidate output '" + name + "' is all zero" + where + " is not");
        else if (kind == "constant")
            warnings.push_back("candidate output '" + name + "' is constant (" + finding.value + ")" + where +
                               " is not");
        else
            warnings.push_back("candidate output '" + name + "' has " + std::to_string(finding.count) +
                               " NaN" + where + " has " +
                               (finding.reference_count == 0 ? std::string("none")
                                                             : std::to_string(finding.reference_count)));
    }
    return warnings;
}

void print_trials(const Verdict& verdict, std::ostream& out, bool compared) {
    for (const auto& [trial, ranks] : verdict.trials) {
        std::string status = trial_status(ranks);
        out << "  trial " << trial << ": " << (status != status::kPass ? status : compared ? "match" : "ran");
        if (status != status::kPass) {
            for (const auto& [rank, result] : ranks) {
                if (json_text(result, "status") != status::kPass) {
                    std::string error = first_error(result);
                    if (error.size() > 220)
                        error = error.substr(0, 217) + "...";
                    out << " | rank " << rank << ": " << error;
                    break;
                }
            }
        }
        out << "\n";
        if (status == status::kPass)
            continue;
        for (const auto& [rank, result] : ranks) {
            out << "      rank " << rank << ": " << json_text(result, "status", "?");
            const auto tensors = result.value("tensors", nlohmann::json::array());
            bool any = false;
            for (const auto& tensor : tensors) {
                if (!tensor.value("pass", true)) {
                    out << (any ? "; " : " | ") << tensor_line(tensor);
                    any = true;
                }
            }
            std::string message = json_text(result, "message");
            if (!any && !message.empty())
                out << " | " << message;
            out << "\n";
        }
    }
}

nlohmann::json trials_json(const Verdict& verdict) {
    nlohmann::json trials = nlohmann::json::array();
    for (const auto& [trial, ranks] : verdict.trials) {
        nlohmann::json ranks_json = nlohmann::json::array();
        for (const auto& [rank, result] : ranks) {
            ranks_json.push_back({{"rank", rank},
                                  {"status", json_text(result, "status")},
                                  {"message", json_text(result, "message")},
                                  {"tensors", result.value("tensors", nlohmann::json::array())}});
        }
        trials.push_back({{"trial", trial}, {"status", trial_status(ranks)}, {"ranks", ranks_json}});
    }
    return trials;
}

} // namespace pkbw::cli
