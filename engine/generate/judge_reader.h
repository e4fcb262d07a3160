// The agent's reader of its judge's output (`pkbw eval|perf --json`, docs/cli.md "--json"): fed the
// bytes as they come, it parses each complete line and keeps only what the verdict needs (the run id,
// the candidate's compile errors, run_finished) and the output's last 2000 bytes. It never depends on
// a size cap: a judge whose output runs to gigabytes (error maps asked for with --json-maps, W=8,
// many trials) is read as one of a few kilobytes is. Lines that are not JSON events are skipped.
#pragma once

#include "agent_command.h"

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw::generate {

class JudgeOutputReader {
public:
    void feed(std::string_view bytes);
    // The last line, when the output did not end with a newline.
    void finish();
    // The verdict; `source` is the candidate, whose lines compile errors are quoted from.
    Verdict verdict(const std::string& source) const;
    std::uint64_t bytes_read() const { return bytes_; }
    // Called with each `progress` event of the judge (a trial or timed block done), as it comes.
    std::function<void(const nlohmann::json&)> on_progress;

private:
    void line(std::string_view text);
    std::string partial_;
    std::int64_t run_id_ = 0;
    std::vector<nlohmann::json> compile_errors_;
    nlohmann::json finished_;
    std::string tail_;
    std::uint64_t bytes_ = 0;
};

} // namespace pkbw::generate
