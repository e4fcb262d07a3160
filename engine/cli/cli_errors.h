// Errors as a user (or a program reading --json) meets them: a mistyped command or option named with
// the closest real one, and every error under --json also as one JSON line on stdout (docs/cli.md
// "--json").
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <memory>
#include <streambuf>
#include <string>
#include <vector>

namespace pkbw::cli {

// Whether the command line asks for JSON output (--json before any "--").
bool wants_json(const std::vector<std::string>& args);

// The command a command line names ("eval", "store check"); "" for none.
std::string command_path(CLI::App& app, const std::vector<std::string>& args);

// A parse error said plainly: "'evl' is not a pkbw command; did you mean eval?", "pkbw eval: --nprocs:
// unknown option; did you mean --nproc?"; else CLI11's own text.
std::string parse_error_message(CLI::App& app, const CLI::ParseError& error,
                                const std::vector<std::string>& args);

// The JSON line of an error: eval, perf, dryrun and calibrate end with run_finished (run_id 0, no run
// was recorded), every other command with {"event": "error", command, exit_code, message}.
std::string error_json_line(const std::string& command, int exit_code, const std::string& message);

// Keeps the last few KiB written to a stream (std::cerr) while passing everything on, so that an error
// a command printed on stderr can also go out as its JSON line.
class StreamTail : public std::streambuf {
public:
    explicit StreamTail(std::ostream& stream);
    ~StreamTail() override;
    StreamTail(const StreamTail&) = delete;
    StreamTail& operator=(const StreamTail&) = delete;
    // What was written, each line's "pkbw: " / "pkbw CMD: " prefix dropped, lines joined by "; ".
    std::string message() const;

protected:
    int overflow(int c) override;
    std::streamsize xsputn(const char* text, std::streamsize count) override;
    int sync() override;

private:
    std::ostream& stream_;
    std::streambuf* original_;
    std::string tail_;
};

} // namespace pkbw::cli
