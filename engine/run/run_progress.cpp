#include "run_progress.h"

#include "pkbw/core/protocol.h"
#include "pkbw/core/status.h"

#include <cmath>
#include <cstdio>
#include <ostream>

namespace pkbw::cli {

std::string format_duration(double seconds) {
    if (seconds < 0)
        return "?";
    const long s = std::lround(seconds);
    char text[32];
    if (s >= 3600)
        std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
    else if (s >= 60)
        std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
    else
        std::snprintf(text, sizeof text, "%lds", s);
    return text;
}

using nlohmann::json;

RunProgress::RunProgress(std::ostream& out, std::ostream& err, bool json, bool terminal, int world_size,
                         int trials, int launches, bool compares, double quiet_seconds)
    : out_(out)
    , err_(err)
    , json_(json)
    , terminal_(terminal && !json)
    , compares_(compares)
    , quiet_seconds_(quiet_seconds)
    , world_size_(world_size < 1 ? 1 : world_size)
    , trials_(trials)
    , launches_(launches < 1 ? 1 : launches) {}

double RunProgress::seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void RunProgress::set_launch(int index) {
    launch_ = index;
    last_news_ = seconds();
    status_.clear();
    if (json_) {
        event({{"stage", "perf_launch"}, {"launch", index + 1}, {"launches", launches_}});
        return;
    }
    line("[perf launch " + std::to_string(index + 1) + "/" + std::to_string(launches_) +
         "] started: fresh rank processes, timing only (" + format_duration(seconds()) + ")");
}

void RunProgress::set_launches(int launches) {
    launches_ = launches < 1 ? 1 : launches;
}

void RunProgress::on_event(int rank, const protocol::Message& message) {
    if (message.event == protocol::kRankResult) {
        const int trial = message.body.value("trial", 0);
        if (trial < 0)
            return; // a rank's failure outside the trials (perf, teardown): the summary reports it
        auto& ranks = trial_ranks_[trial];
        ranks[rank] = message.body.value("status", "?");
        if (static_cast<int>(ranks.size()) == world_size_)
            trial_done(trial);
    } else if (message.event == protocol::kPerfProgress && rank == 0) {
        block_done(message.body);
    } else if (message.event == protocol::kPhase && rank == 0) {
        last_phase_ = message.body.value("phase", "");
        if (terminal_) {
            phase_ = last_phase_;
            redraw();
        }
    }
}

void RunProgress::on_wait() {
    const double now = seconds();
    if (terminal_) {
        if (now - last_redraw_ >= 1.0)
            redraw(); // the seconds tick
        return;
    }
    if (now - last_news_ < quiet_seconds_)
        return;
    const double quiet = now - last_news_;
    last_news_ = now;
    if (json_) {
        event({{"stage", "waiting"}, {"phase", last_phase_}, {"quiet_seconds", quiet}});
        return;
    }
    line("[still running] rank 0 in phase " + (last_phase_.empty() ? std::string("start") : last_phase_) +
         ", nothing new for " + format_duration(quiet) + " (" + format_duration(now) + ")");
}

void RunProgress::trial_done(int trial) {
    ++trials_done_;
    last_news_ = seconds();
    std::string status = compares_ ? "match" : "ran";
    int culprit = -1;
    for (const auto& [rank, rank_status] : trial_ranks_[trial]) {
        if (rank_status != status::kPass) {
            status = rank_status;
            culprit = rank;
            break;
        }
    }
    if (json_) {
        event({{"stage", "trial"},
               {"trial", trial},
               {"trials", trials_},
               {"done", trials_done_},
               {"status", status},
               {"rank", culprit < 0 ? json(nullptr) : json(culprit)}});
        return;
    }
    char text[160];
    std::snprintf(text, sizeof text, "[trial %d/%d] %s%s (%s)", trial + 1, trials_, status.c_str(),
                  culprit < 0 ? "" : (" on rank " + std::to_string(culprit)).c_str(),
                  format_duration(seconds()).c_str());
    line(text);
}

void RunProgress::block_done(const json& body) {
    last_news_ = seconds();
    const int block = body.value("block", 0), blocks = body.value("blocks", 0);
    const std::string protocol_name = body.value("protocol", ""), side = body.value("side", "");
    if (json_) {
        event({{"stage", "perf_block"},
               {"launch", launch_ + 1},
               {"launches", launches_},
               {"block", block},
               {"blocks", blocks},
               {"protocol", protocol_name},
               {"side", side}});
        return;
    }
    char text[200];
    std::snprintf(text, sizeof text, "[perf launch %d/%d] block %d/%d timed: %s protocol, %s (%s)",
                  launch_ + 1, launches_, block, blocks, protocol_name.c_str(), side.c_str(),
                  format_duration(seconds()).c_str());
    if (terminal_) { // the blocks redraw one line; the trials leave theirs
        status_ = text;
        redraw();
        return;
    }
    line(text);
}

void RunProgress::line(const std::string& text) {
    if (terminal_)
        err_ << "\r\033[K";
    err_ << "pkbw: " << text << "\n";
    if (terminal_)
        redraw();
    err_ << std::flush;
}

void RunProgress::redraw() {
    if (!terminal_)
        return;
    last_redraw_ = seconds();
    err_ << "\r\033[K";
    if (!status_.empty())
        err_ << status_;
    else
        err_ << "[trials " << trials_done_ << "/" << trials_ << " done"
             << (phase_.empty() ? "" : ", " + phase_) << "] " << format_duration(seconds());
    err_ << std::flush;
}

void RunProgress::event(json body) {
    body["event"] = protocol::kProgress;
    body["seconds"] = seconds();
    out_ << protocol::to_line(body) << std::flush;
}

void RunProgress::close() {
    if (terminal_)
        err_ << "\r\033[K" << std::flush;
}

} // namespace pkbw::cli
