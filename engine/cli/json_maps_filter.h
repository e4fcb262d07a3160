// `--json` without the per-element error maps (docs/cli.md "--json"): a stream buffer in front of
// stdout that passes the run's JSON lines through whole, less every member named "error_map" (the
// 256x256 map of each output that rank_result and run_finished carry: 5 MB of zeros for a passing
// 2-rank eval of 5 trials, far more at W=8). The store keeps the maps either way; `--json-maps`
// leaves them in (main.cpp installs no filter then). A line without such a member is written as it
// came; one with them is parsed and written again without them (nlohmann's dump, as pkbw wrote it).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace pkbw::cli {

// Removes every object member named "error_map", at any depth; returns how many.
std::size_t strip_error_maps(nlohmann::json& value);

class ErrorMapFilter : public std::streambuf {
public:
    explicit ErrorMapFilter(std::ostream& sink)
        : sink_(sink) {}
    ErrorMapFilter(const ErrorMapFilter&) = delete;
    ErrorMapFilter& operator=(const ErrorMapFilter&) = delete;
    ~ErrorMapFilter() override;

protected:
    int_type overflow(int_type ch) override;
    std::streamsize xsputn(const char* data, std::streamsize count) override;
    int sync() override;

private:
    void write_line(std::string_view line); // without its newline
    std::ostream& sink_;
    std::string pending_; // the current line, not yet ended
};

} // namespace pkbw::cli
