// Runs a short-lived helper program (a compiler, `nvcc --version`) and captures its output.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw::cli {

struct ProcessResult {
    bool started = false;     // false: exec failed (output holds why)
    int exit_code = -1;       // when it exited
    int signal = 0;           // when a signal ended it
    bool timed_out = false;   // killed after `timeout_s`
    bool interrupted = false; // killed because pkbw got SIGINT/SIGTERM
    std::string output;       // stdout and stderr interleaved, at most `max_output` bytes kept
    double seconds = 0;
    bool ok() const { return started && exit_code == 0 && signal == 0 && !timed_out && !interrupted; }
};

// The environment of this process minus `unset` (e.g. CUDA_INJECTION64_PATH: a profiler injected
// into pkbw must not be injected into the compiler).
std::vector<std::string> current_environment(const std::vector<std::string>& unset = {},
                                             const std::map<std::string, std::string>& set = {});

// Every byte of a process's output, as it comes (stdout and stderr interleaved).
using OutputSink = std::function<void(std::string_view)>;

// Runs argv[0] (searched in PATH) in its own process group with stdin from /dev/null; kills the group
// on timeout or on an interrupt (see signals.h). `result.output` keeps at most `max_output` bytes;
// `on_output`, when given, sees all of them (a reader that must not depend on a size cap).
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                          double timeout_s, std::size_t max_output = 4u << 20,
                          const OutputSink& on_output = {});

} // namespace pkbw::cli
