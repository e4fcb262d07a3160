// The "generation" a solution belongs to: which LLM run produced it, recovered from PKB's folder
// naming `solutions_<backend>_<precision>_<hardware|none>_<provider>_<model>` (docs/store.md
// "Generation labels" gives the parsing rules).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace pkbw {

struct GenerationLabel {
    std::string label; // the folder name as found (or "" when there is none); the run's grouping key
    std::string backend, precision, hardware, provider, model;
    bool parsed = false; // all five parts were recognised
};

// Providers the parser recognises as the separator between hardware and model. PKB's
// generate_kernel.py allow-list (google, together, anthropic, openai) plus names used for
// hand-made trees (samples, local, human, ...).
std::span<const std::string_view> known_generation_providers();

// Accepts a folder name ("solutions_cuda_bf16_none_anthropic_claude-opus-4-7") or a path (the last
// component starting with "solutions_" is used, so a solution file's path works too). Never throws:
// an unparsable name gives {label = the name, parsed = false}.
GenerationLabel parse_generation_label(std::string_view folder_name);

} // namespace pkbw
