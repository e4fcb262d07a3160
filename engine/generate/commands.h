// The generation subcommands (`prompt`, `generate`, `agent`; docs/generate.md), registered on the
// pkbw command line by two calls from engine/cli/main.cpp.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::generate {

class Commands {
public:
    virtual ~Commands() = default;
    // The exit code of the generation subcommand that was parsed, or nullopt when none was.
    virtual std::optional<int> run_parsed() = 0;
    // argv, recorded with a generation.
    virtual void set_command_line(std::vector<std::string> line) = 0;
    // After `pkbw show RUN` (text): the agent trajectory when the run judged an attempt.
    virtual void after_show(const std::string& store_path, std::int64_t run_id) = 0;
};

std::unique_ptr<Commands> register_commands(CLI::App& app);

} // namespace pkbw::generate
