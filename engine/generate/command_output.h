// What `pkbw generate` and `pkbw agent` print besides their results: progress (a line per retry, per
// judged trial, per attempt) on stderr, or with --json everything as JSON lines on stdout, one object
// per line with an "event" field, as every pkbw command's --json (docs/cli.md "--json"). Shared by
// the worker threads of `generate`, hence the lock.
#pragma once

#include <iosfwd>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace pkbw::generate {

class CommandOutput {
public:
    CommandOutput(bool json, std::ostream& out, std::ostream& err)
        : json_(json)
        , out_(out)
        , err_(err) {}
    bool json() const { return json_; }
    // --json: `body` with "event" set, on stdout; else nothing.
    void event(const std::string& name, nlohmann::json body);
    // --json: a "progress" event of `stage` with `body`; else "pkbw: <text>" on stderr.
    void progress(const std::string& stage, nlohmann::json body, const std::string& text);
    // Not --json: a result line on stdout.
    void result(const std::string& text);

private:
    bool json_;
    std::ostream& out_;
    std::ostream& err_;
    std::mutex mutex_;
};

} // namespace pkbw::generate
