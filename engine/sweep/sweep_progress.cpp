#include "sweep_progress.h"

#include "pkbw/core/status.h"
#include "run_progress.h" // format_duration

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>

namespace pkbw::cli {

SweepProgress::SweepProgress(std::ostream& out, bool json, bool terminal, std::size_t total,
                             std::size_t already_done, std::size_t slots)
    : out_(out)
    , json_(json)
    , terminal_(terminal && !json)
    , total_(total)
    , done_(already_done)
    , slots_(slots == 0 ? 1 : slots) {
    if (json_)
        out_ << nlohmann::json{{"event", "sweep_progress"},
                               {"done", done_},
                               {"total", total_},
                               {"slots", slots_}}
                    .dump()
             << "\n"
             << std::flush;
    else if (terminal_)
        redraw();
}

double SweepProgress::eta_seconds() const {
    if (finished_here_ == 0)
        return -1;
    const double mean = seconds_here_ / static_cast<double>(finished_here_);
    const double left = static_cast<double>(total_ - done_);
    return mean * std::ceil(left / static_cast<double>(slots_));
}

void SweepProgress::started(const SweepPair& pair) {
    ++running_;
    if (json_)
        out_ << nlohmann::json{{"event", "pair_started"},
                               {"generation", pair.generation_label},
                               {"problem", pair.problem_stem},
                               {"solution", pair.solution_path}}
                    .dump()
             << "\n"
             << std::flush;
    else if (terminal_)
        redraw();
}

void SweepProgress::finished(const SweepPair& pair, const std::string& verdict, double seconds,
                             const std::string& speedup) {
    if (running_ > 0)
        --running_;
    ++done_;
    ++finished_here_;
    seconds_here_ += seconds;
    ++verdicts_[verdict];
    if (json_) {
        nlohmann::json event = {
            {"event", "pair_finished"},
            {"generation", pair.generation_label},
            {"problem", pair.problem_stem},
            {"run_id", pair.run_id ? nlohmann::json(*pair.run_id) : nlohmann::json(nullptr)},
            {"status", verdict},
            {"state", pair.state},
            {"message", pair.message},
            {"seconds", seconds},
            {"speedup", speedup.empty() ? nlohmann::json(nullptr) : nlohmann::json(speedup)},
            {"done", done_},
            {"total", total_},
            {"eta_s", eta_seconds()}};
        out_ << event.dump() << "\n" << std::flush;
        return;
    }
    if (terminal_) {
        out_ << "\r\033[K";
    }
    char line[64];
    std::snprintf(line, sizeof line, "[%zu/%zu] ", done_, total_);
    out_ << line << pair.generation_label << " " << pair.problem_stem << ": " << verdict << " ("
         << format_duration(seconds) << ")";
    if (!speedup.empty())
        out_ << " speedup " << speedup;
    if (verdict != status::kPass && !pair.message.empty())
        out_ << " " << pair.message.substr(0, 160);
    out_ << "\n";
    if (terminal_)
        redraw();
    out_ << std::flush;
}

void SweepProgress::redraw() {
    constexpr int kWidth = 30;
    const int filled = total_ == 0 ? kWidth : static_cast<int>(kWidth * done_ / total_);
    std::string bar(static_cast<std::size_t>(filled), '=');
    bar.resize(kWidth, ' ');
    out_ << "\r\033[K[" << bar << "] " << done_ << "/" << total_ << " done";
    for (const auto& [verdict, count] : verdicts_)
        out_ << ", " << count << " " << verdict;
    out_ << ", " << running_ << " running, ETA " << format_duration(eta_seconds()) << std::flush;
}

void SweepProgress::close() {
    if (terminal_)
        out_ << "\r\033[K" << std::flush;
}

} // namespace pkbw::cli
