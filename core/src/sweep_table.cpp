#include "pkbw/core/sweep_table.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace pkbw {

namespace {

// "launch_speedup_3" -> 3 when `name` is `prefix` followed by digits only.
std::optional<int> launch_index(const std::string& name, const std::string& prefix) {
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
        return std::nullopt;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    return std::atoi(digits.c_str());
}

} // namespace

StoredSpeedup stored_speedup(const std::vector<PerfSummaryRow>& summaries) {
    StoredSpeedup out;
    std::map<int, StoredLaunch> launches;
    for (const auto& s : summaries) {
        if (s.side != Side::Candidate || s.rank != -1)
            continue;
        const std::string& name = s.statistic;
        if (name == "speedup") {
            if (std::isfinite(s.value) && s.value > 0)
                out.speedup = s.value;
        } else if (name == "speedup_ci_low") {
            out.ci_low = s.value; // a non-finite bound stays: such a pair clears no p
        } else if (name == "speedup_ci_high") {
            out.ci_high = s.value;
        } else if (name == "verdict") {
            out.verdict = verdict_from_code(s.value);
        } else if (name == "verdict_band") {
            out.band = s.value;
        } else if (name == "launches") {
            if (std::isfinite(s.value) && s.value >= 0)
                out.launches = static_cast<int>(s.value);
        } else if (name == "extended_from") {
            if (std::isfinite(s.value) && s.value > 0)
                out.extended_from = static_cast<int>(s.value);
        } else if (name == "pkb_speedup") {
            out.pkb_speedup = s.value;
        } else if (auto i = launch_index(name, "launch_speedup_")) {
            launches[*i].index = *i;
            launches[*i].speedup = s.value;
        } else if (auto i = launch_index(name, "launch_ci_low_")) {
            launches[*i].index = *i;
            launches[*i].ci_low = s.value;
        } else if (auto i = launch_index(name, "launch_ci_high_")) {
            launches[*i].index = *i;
            launches[*i].ci_high = s.value;
        }
    }
    for (auto& [index, launch] : launches)
        out.per_launch.push_back(launch);
    return out;
}

bool speedup_is_result(RunStatus status) {
    return status == RunStatus::Pass;
}

std::string speedup_withheld_reason(RunStatus status) {
    switch (status) {
    case RunStatus::Pass:
        return "";
    case RunStatus::InvalidTiming:
        return "timing not trusted (invalid_timing)";
    case RunStatus::Mismatch:
    case RunStatus::InvalidOutput:
        return "outputs wrong (" + std::string(to_string(status)) + ")";
    case RunStatus::Running:
        return "still running";
    default:
        return "no clean result (" + std::string(to_string(status)) + ")";
    }
}

std::string speedup_withheld_word(RunStatus status) {
    if (speedup_is_result(status))
        return "";
    return status == RunStatus::InvalidTiming ? "untrusted" : "withheld";
}

namespace {

// The default band of "a difference" (VerdictRule's 5%): a direction is only read beyond it.
double default_band() {
    return 1.0 + VerdictRule{}.band();
}

// The verdict a pair is judged by: its stored one, else the one its interval gives under the default
// rule; none without an interval.
std::optional<Verdict> judged_verdict(const PairOutcome& pair) {
    if (pair.verdict)
        return pair.verdict;
    if (pair.speedup && pair.ci_low && pair.ci_high)
        return classify_speedup(*pair.speedup, *pair.ci_low, *pair.ci_high, VerdictRule{});
    if (pair.ci_low) // the low end alone: faster when it clears 1
        return *pair.ci_low > 1.0 ? Verdict::Faster : Verdict::Ambiguous;
    return std::nullopt;
}

} // namespace

bool pkb_disagrees(const PairOutcome& pair) {
    if (!pair.speedup || !pair.pkb_speedup || !(*pair.pkb_speedup > 0))
        return false;
    const double band = default_band();
    const double a = *pair.speedup, b = *pair.pkb_speedup;
    return (a > band && b < 1.0 / band) || (a < 1.0 / band && b > band);
}

double fast_bound(const PairOutcome& pair) {
    if (!pair.correct || !pair.speedup)
        return 0;
    double bound = 0;
    if (!pair.ci_low) {
        bound = *pair.speedup; // legacy: no interval stored (see the header)
    } else if (!std::isfinite(*pair.ci_low)) {
        return 0; // a non-finite bound clears no p
    } else {
        bound = *pair.ci_low;
        // Below 1 the interval decides; from 1 on only a verdict of faster counts.
        if (judged_verdict(pair) != Verdict::Faster)
            bound = std::min(bound, 1.0);
    }
    if (pkb_disagrees(pair))
        bound = std::min(bound, 1.0);
    return std::isfinite(bound) && bound > 0 ? bound : 0;
}

bool counts_toward_fast_p(const PairOutcome& pair, double p) {
    if (!pair.correct)
        return false;
    if (p <= 0)
        return true;
    return fast_bound(pair) > p; // clears(ci_low, p) with the verdict's and PKB's limits
}

bool counts_toward_fast_p(bool correct, std::optional<double> speedup, std::optional<double> ci_low,
                          double p) {
    PairOutcome pair;
    pair.correct = correct;
    pair.speedup = speedup;
    pair.ci_low = ci_low;
    if (speedup && ci_low) // no upper end in this form: faster when the interval clears 1
        pair.verdict = *ci_low > 1.0 ? Verdict::Faster : Verdict::Ambiguous;
    return counts_toward_fast_p(pair, p);
}

double fast_bound(double speedup, std::optional<double> ci_low) {
    // Legacy (no interval stored): the point estimate, the only figure there is (see the header).
    return ci_low ? *ci_low : speedup;
}

void PaperFigures::add(const PairOutcome& pair) {
    ++attempted;
    if (!pair.correct)
        return;
    ++correct;
    if (!pair.speedup || !std::isfinite(*pair.speedup) || !(*pair.speedup > 0))
        return;
    ++timed;
    speedups.push_back(*pair.speedup);
    const bool disputed_pair = pkb_disagrees(pair);
    disputed += disputed_pair ? 1 : 0;
    faster += pair.verdict == Verdict::Faster && !disputed_pair ? 1 : 0;
    const double bound = fast_bound(pair);
    if (bound > 0)
        fast_bounds.push_back(bound);
}

double PaperFigures::fast_p(double p) const {
    if (attempted == 0)
        return 0;
    if (p <= 0)
        return static_cast<double>(correct) / attempted;
    int count = 0;
    for (double bound : fast_bounds)
        count += bound > p ? 1 : 0; // counts_toward_fast_p
    return static_cast<double>(count) / attempted;
}

std::optional<double> PaperFigures::geomean() const {
    if (speedups.empty())
        return std::nullopt;
    double log_sum = 0;
    for (double s : speedups)
        log_sum += std::log(s);
    return std::exp(log_sum / static_cast<double>(speedups.size()));
}

std::vector<std::pair<double, double>> PaperFigures::fast_p_steps(double p_end) const {
    std::vector<std::pair<double, double>> steps;
    if (attempted == 0)
        return steps;
    // fast_p(0) holds at p = 0 alone: just above it only the pairs with a bound count.
    steps.emplace_back(0.0, fast_p(0));
    steps.emplace_back(0.0, static_cast<double>(fast_bounds.size()) / attempted);
    std::vector<double> bounds = fast_bounds;
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    for (double b : bounds)
        steps.emplace_back(b, fast_p(b)); // strictly above b from here on
    steps.emplace_back(std::max(p_end, steps.back().first), 0.0);
    return steps;
}

std::vector<double> default_fast_p() {
    return {0, 1, 1.5, 2};
}

SweepTable sweep_table(const Store& store, std::int64_t sweep_id) {
    SweepTable table;
    auto sweep = find_sweep(store, sweep_id);
    if (!sweep)
        throw StoreError("store " + store.path().string() + ": no sweep " + std::to_string(sweep_id));
    table.sweep = *sweep;
    std::map<std::string, std::size_t> index;
    for (auto& pair : sweep_pairs(store, sweep_id)) {
        SweepPairView view;
        view.pair = pair;
        if (!index.count(pair.generation_label)) {
            index[pair.generation_label] = table.generations.size();
            table.generations.push_back({});
            table.generations.back().label = pair.generation_label;
        }
        SweepGenerationRow& row = table.generations[index[pair.generation_label]];
        ++table.total;
        PairOutcome outcome;
        std::optional<RunRecord> run;
        if (pair.run_id)
            run = store.get_run(*pair.run_id);
        if (pair.state == pair_state::kFailed && !run) {
            view.status = "no run";
        } else if (!run || !sweep_run_status_is_final(run->status) || pair.state != pair_state::kDone) {
            view.status = "not run";
        } else {
            view.status = std::string(to_string(run->status));
            ++row.judged;
            ++table.done;
            outcome.correct = speedup_is_result(run->status);
            if (outcome.correct) {
                const StoredSpeedup stored = stored_speedup(store.perf_summaries(run->id));
                view.speedup = stored.speedup;
                view.pkb_speedup = stored.pkb_speedup;
                if (view.speedup) {
                    view.ci_low = stored.ci_low;
                    view.ci_high = stored.ci_high;
                    view.verdict = stored.verdict;
                    outcome = {true, view.speedup, view.ci_low, view.ci_high, view.verdict, view.pkb_speedup};
                    view.disputed = pkb_disagrees(outcome);
                    view.faster = stored.verdict == Verdict::Faster && !view.disputed;
                    if (view.verdict)
                        ++row.verdicts[verdict_name(*view.verdict)];
                }
            }
        }
        row.add(outcome);
        if (view.status != "pass")
            ++row.failures[view.status]; // invalid_timing among them: neither correct nor timed
        table.pairs.push_back(std::move(view));
    }
    return table;
}

namespace {

// Whitespace runs (newlines included) folded to one space, ends trimmed.
std::string folded(std::string_view text) {
    std::string out;
    for (char c : text) {
        const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
        if (space) {
            if (!out.empty() && out.back() != ' ')
                out += ' ';
        } else {
            out += c;
        }
    }
    while (!out.empty() && out.back() == ' ')
        out.pop_back();
    return out;
}

// The line a Python traceback ends with: the last line that starts at column 0 with a name ending in
// Error or Exception (frames and source lines are indented; pybind11's "Invoked with" lines follow it).
std::size_t exception_line_start(std::string_view text, std::size_t traceback_at) {
    std::size_t found = std::string_view::npos;
    for (std::size_t at = text.find('\n', traceback_at); at != std::string_view::npos;
         at = text.find('\n', at + 1)) {
        const std::size_t begin = at + 1;
        const std::size_t colon = text.find(':', begin);
        const std::size_t end = text.find('\n', begin);
        if (begin >= text.size() || colon == std::string_view::npos ||
            (end != std::string_view::npos && colon > end))
            continue;
        const std::string_view name = text.substr(begin, colon - begin);
        const bool word = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
        });
        if (word && (name.ends_with("Error") || name.ends_with("Exception")))
            found = begin;
    }
    return found;
}

} // namespace

std::string pair_message_headline(const std::string& message, std::size_t limit) {
    const std::string_view text = message;
    std::string line;
    const std::size_t traceback = text.find("Traceback (most recent call last):");
    const std::size_t exception =
        traceback == std::string_view::npos ? std::string_view::npos : exception_line_start(text, traceback);
    if (exception != std::string_view::npos) {
        const std::string before = folded(text.substr(0, traceback));
        line = (before.empty() ? "" : before + " ") + folded(text.substr(exception));
    } else {
        line = folded(text.substr(0, std::min(text.size(), limit * 4)));
    }
    if (line.size() > limit) {
        // Cut at a character's start, not inside a UTF-8 sequence (pkbw's messages hold ×, µ, ≠).
        std::size_t cut = limit > 3 ? limit - 3 : 0;
        while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80)
            --cut;
        line.resize(cut);
        line += "...";
    }
    return line;
}

} // namespace pkbw
