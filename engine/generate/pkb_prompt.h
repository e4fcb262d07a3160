// PKB's kernelgen prompt, assembled from a ParallelKernelBench checkout's own kernelgen/prompts.toml
// exactly as kernelgen/generate_kernel.py assembles it (docs/generate.md "PKB prompts"), so that
// `pkbw prompt` prints the bytes `generate_kernel.py --print-prompt` prints.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::generate {

// The model slug PKB puts in folder names (generate_kernel.py _slug_model_for_path): '/' -> '_', runs
// of other characters than [A-Za-z0-9._-] -> '_', '_' runs collapsed, '_' trimmed, at most 72 chars.
std::string pkb_model_slug(const std::string& model);

// solutions_<backend>_<precision>_<hardware|none>_<provider>_<slug>
std::string pkb_output_dir(const std::string& backend, const std::string& precision,
                           const std::optional<std::string>& hardware, const std::string& provider,
                           const std::string& model);

struct PkbPromptRequest {
    std::string stem;                    // "2_allgather": reads reference/<stem>.py
    std::string backend;                 // a key under [backends]
    std::string precision;               // a key under [precision]
    std::optional<std::string> hardware; // a key under [hardware_profiles], or none
    std::string solution_relative_path;  // the footer's "saved as" path
};

class PkbPrompts {
public:
    // Reads <checkout>/kernelgen/prompts.toml (or `prompts_toml`). Throws pkbw::FormatError naming the
    // file and line for a TOML error.
    static PkbPrompts load(const std::filesystem::path& checkout,
                           const std::optional<std::filesystem::path>& prompts_toml = std::nullopt);
    PkbPrompts(PkbPrompts&&) noexcept;
    PkbPrompts& operator=(PkbPrompts&&) noexcept;
    ~PkbPrompts();

    const std::filesystem::path& checkout() const;
    std::string default_backend() const;                // meta.default_backend, else "cuda"
    std::vector<std::string> backends() const;          // keys of [backends]
    std::vector<std::string> precisions() const;        // keys of [precision]
    std::vector<std::string> hardware_profiles() const; // keys of [hardware_profiles]

    // PKB's resolve_problem: a number picks the first reference/<n>_*.py in sorted order; a stem (with
    // or without ".py") is taken as is. "all" is every reference/*.py stem, sorted; "[a, b]" a list.
    std::vector<std::string> resolve_problems(const std::string& argument) const;

    // The user message (assemble_user_prompt) and the system message (system_prompt_for_backend, with
    // the script's built-in SYSTEM_PROMPT as fallback). Throw pkbw::FormatError naming the key.
    std::string user_prompt(const PkbPromptRequest& request) const;
    std::string system_prompt(const std::string& backend) const;

    // What --print-prompt prints for one problem: 72 '=', "PROBLEM <stem>", 72 '=', the prompt, "\n".
    static std::string print_block(const std::string& stem, const std::string& prompt);

private:
    struct Impl;
    explicit PkbPrompts(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

} // namespace pkbw::generate
