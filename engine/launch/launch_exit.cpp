// How a rank ended, in the launcher's words: the outcome's kind (LaunchEnd), the message naming the
// rank, its phase, its signal or exit code and its last stderr lines, and which of several ranks seen
// failed at once is the culprit.
#include "launch_rank.h"
#include "pkbw/core/status.h"

#include <algorithm>

namespace pkbw::cli {

std::string RankReport::last_lines(int lines) const {
    std::string_view tail = stderr_tail;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r'))
        tail.remove_suffix(1);
    std::size_t begin = tail.size();
    for (int i = 0; i < lines && begin > 0; ++i) {
        std::size_t newline = tail.rfind('\n', begin - 1);
        begin = newline == std::string_view::npos ? 0 : newline;
        if (newline == std::string_view::npos)
            break;
    }
    if (begin < tail.size() && tail[begin] == '\n')
        ++begin;
    return std::string(tail.substr(begin));
}

std::string_view launch_end_name(LaunchEnd end) {
    switch (end) {
    case LaunchEnd::Completed:
        return "completed";
    case LaunchEnd::Timeout:
        return "timeout";
    case LaunchEnd::Crash:
        return "crash";
    case LaunchEnd::EnvironmentError:
        return "environment_error";
    case LaunchEnd::InternalError:
        return "internal_error";
    case LaunchEnd::Interrupted:
        return "interrupted";
    case LaunchEnd::SpawnFailed:
        return "spawn_failed";
    }
    return "unknown";
}

namespace launch {

std::string describe_exit(const RankReport& report) {
    std::string text = "rank " + std::to_string(report.rank);
    if (report.signal != 0)
        text += " crashed with " + signal_name(report.signal);
    else if (report.exit_code == 0 && !report.done)
        text += " exited with code 0 before finishing (the solution ended the process)";
    else
        text += " exited with code " + std::to_string(report.exit_code);
    text += " in phase " + report.phase;
    if (report.trial >= 0)
        text += " (trial " + std::to_string(report.trial) + ")";
    if (!report.last_error.empty())
        text += ": " + report.last_error;
    std::string tail = report.last_lines(5);
    if (!tail.empty())
        text += "; last stderr:\n" + tail;
    return text;
}

LaunchEnd classify_exit(const RankReport& report) {
    if (report.signal != 0)
        return LaunchEnd::Crash;
    if (report.exit_code == status::kExitEnvironment)
        return LaunchEnd::EnvironmentError;
    if (report.exit_code == status::kExitInternal)
        return LaunchEnd::InternalError;
    return LaunchEnd::Crash;
}

int first_culprit(const std::vector<Rank>& ranks, std::vector<int> failed) {
    const auto severity = [&](int r) {
        const RankReport& report = ranks[static_cast<std::size_t>(r)].report;
        return report.signal != 0                               ? 0
               : report.exit_code == status::kExitOk            ? 1
               : report.exit_code == status::kExitSolutionBroke ? 2
                                                                : 3;
    };
    std::stable_sort(failed.begin(), failed.end(), [&](int a, int b) { return severity(a) < severity(b); });
    return failed[0];
}

} // namespace launch
} // namespace pkbw::cli
