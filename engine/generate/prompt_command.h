// `pkbw prompt` and the prompt assembly `pkbw generate` and `pkbw agent` share (docs/generate.md).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::generate {

struct PromptOptions {
    std::string problem;
    std::string backend = "cuda"; // cuda | triton | parallelkittens (PKB) | native | host (pkbw ABI)
    std::string precision = "bf16";
    std::optional<std::string> hardware;
    std::optional<std::string> pkb_checkout;             // default $PKB_CHECKOUT
    std::string model = "google/gemini-3-flash-preview"; // names the footer's output folder
    int nproc = 2;
    std::optional<std::string> store; // the native prompt's hardware from the latest run's GPUs
    bool system = false;              // print the system message too
};

bool is_native_backend(const std::string& backend); // native, host

// One problem's messages and where its answer is saved (relative to the output root).
struct AssembledPrompt {
    std::string stem;
    std::string system;
    std::string user;
    std::string relative_path; // solutions_.../<stem>_<backend>.<ext>
    std::string language;      // the fence language wanted: python, cuda or cpp
};

// Assembles every problem `options.problem` names. Throws pkbw::Error with a clear message.
std::vector<AssembledPrompt> assemble_prompts(const PromptOptions& options);

void add_prompt_options(CLI::App& command, PromptOptions& options);
int run_prompt_command(const PromptOptions& options);

} // namespace pkbw::generate
