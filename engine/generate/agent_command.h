// `pkbw agent`: generate a candidate, judge it with pkbw itself (eval, or perf with --perf; PKB's
// Python solutions through `pkbw eval --pkb-checkout`), feed the verdict back, and iterate until it
// passes (and, with --perf, is faster), or the attempts or the budget end. Each attempt is an agent_attempts
// row linked to the run that judged it and to its parent attempt (docs/generate.md "The agent loop").
#pragma once

#include "generate_command.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace pkbw::generate {

struct AgentOptions {
    // model, provider, HTTP, store; prompt.backend is host or native, or with a PKB checkout one of
    // PKB's Python backends (cuda, triton, parallelkittens)
    GenerateOptions generate;
    std::string judge_backend = "cuda"; // PKB backends: the judge's --backend (cuda or host)
    int attempts = 5;
    double budget_usd = 5.0;
    bool perf = false;                        // judge with `pkbw perf`; done when the interval clears 1
    std::string pkbw_program;                 // default: the running pkbw
    std::vector<std::string> judge_arguments; // extra flags for the judge (--timeout 30, ...)
};

// The verdict of one judged attempt, from the judge's JSON lines (docs/cli.md "--json").
struct Verdict {
    std::int64_t run_id = 0;
    std::string status; // the run's status (pass, mismatch, compile_error, crash, timeout, ...)
    std::optional<double> speedup, ci_low, ci_high;
    std::string perf_verdict;
    std::string feedback; // what the model is told
};

// Reads the judge's output (JSON lines, other lines ignored) into a verdict; `source` is the
// candidate, whose lines the compile errors are quoted from.
Verdict verdict_from_judge_output(const std::string& output, const std::string& source);

void add_agent_options(CLI::App& command, AgentOptions& options);
int run_agent_command(const AgentOptions& options);

// Prints a generation: its settings, exchanges and (for an agent) the trajectory with fast1@k.
int show_generation(const std::optional<std::string>& store, std::int64_t generation_id, std::ostream& out,
                    std::ostream& err);

} // namespace pkbw::generate
