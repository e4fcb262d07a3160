// `pkbw generate`: one prompt per problem (and sample) sent to a model, the answers written as PKB
// names its generation folders, every exchange recorded in the store (docs/generate.md).
#pragma once

#include "http_client.h"
#include "model_spec.h"
#include "pkbw/core/generation_store.h"
#include "prompt_command.h"
#include "provider.h"

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::generate {

struct GenerateOptions {
    PromptOptions prompt; // problem (ranges allowed), backend, precision, hardware, checkout, model
    int samples = 1;
    std::optional<std::string> base_url;
    std::optional<std::string> output_root; // default: the PKB checkout for PKB backends, else "."
    int max_tokens = 0;
    bool stream = false;
    int concurrency = 4;
    HttpSettings http;
    std::vector<std::string> command_line;
    bool json = false; // --json: JSON lines on stdout (docs/generate.md "Output")
};

// "1-20", "1,3,7-9", "all", "2_allgather": the --problem text assemble_prompts() accepts.
std::string expand_problem_ranges(const std::string& text);

void add_generate_options(CLI::App& command, GenerateOptions& options);
// Options shared with `pkbw agent`: provider, HTTP and retry settings.
void add_provider_options(CLI::App& command, GenerateOptions& options);
int run_generate_command(const GenerateOptions& options);

class ModelClient;
class CommandOutput;
// A progress line (or --json event) for every retried try of `client`'s requests.
void report_retries(ModelClient& client, CommandOutput& output, int max_retries);

// The provider a model is asked through (generate and agent alike): --base-url or the model's own,
// without a trailing '/', the key from the environment. Throws naming --model when there is no URL.
ProviderSettings provider_settings(const GenerateOptions& options, const ModelSpec& model);
// A generation row's fields that say which model was asked, where and for what (kind and label aside).
GenerationRow model_generation_row(std::string kind, const PromptOptions& prompt, const ModelSpec& model,
                                   const ProviderSettings& provider);

} // namespace pkbw::generate
