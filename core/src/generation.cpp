// PKB's generate_kernel.py names its output folder
// solutions_<backend>_<precision>_<hardware|none>_<provider>_<slug>, joining with '_' although the
// hardware ("h100_8") and the model slug ("zai-org_GLM-5.1") may contain '_' themselves. The parse
// therefore anchors on tokens from closed sets: the precision, then the first known provider after
// at least one hardware token (docs/store.md "Generation labels").
#include "pkbw/core/generation.h"

#include <algorithm>
#include <array>
#include <vector>

namespace pkbw {

namespace {

constexpr std::array<std::string_view, 12> kProviders{"google",   "together", "anthropic", "openai",
                                                      "samples",  "local",    "human",     "meta",
                                                      "deepseek", "mistral",  "xai",       "qwen"};
constexpr std::array<std::string_view, 10> kPrecisions{"fp32", "fp16", "bf16", "fp64", "fp8",
                                                       "tf32", "f32",  "f16",  "f64",  "mixed"};
constexpr std::string_view kPrefix = "solutions_";

bool contains(std::span<const std::string_view> set, std::string_view token) {
    return std::find(set.begin(), set.end(), token) != set.end();
}

std::vector<std::string_view> split(std::string_view text, char separator) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
        if (i == text.size() || text[i] == separator) {
            parts.push_back(text.substr(start, i - start));
            start = i + 1;
        }
    }
    return parts;
}

std::string join(const std::vector<std::string_view>& tokens, std::size_t begin, std::size_t end) {
    std::string text;
    for (std::size_t i = begin; i < end; ++i) {
        if (i > begin)
            text += '_';
        text += tokens[i];
    }
    return text;
}

// The folder a label comes from: the last path component starting with "solutions_"; otherwise the
// last component, or its parent when it looks like a solution file.
std::string_view pick_component(std::string_view path) {
    std::vector<std::string_view> components;
    for (auto part : split(path, '/'))
        if (!part.empty() && part != ".")
            components.push_back(part);
    for (auto it = components.rbegin(); it != components.rend(); ++it)
        if (it->starts_with(kPrefix))
            return *it;
    if (components.empty())
        return {};
    if (components.size() >= 2 && components.back().ends_with(".py"))
        return components[components.size() - 2];
    return components.back();
}

} // namespace

std::span<const std::string_view> known_generation_providers() {
    return kProviders;
}

GenerationLabel parse_generation_label(std::string_view folder_name) {
    GenerationLabel result;
    std::string_view name = pick_component(folder_name);
    result.label = std::string(name);
    if (!name.starts_with(kPrefix))
        return result;
    auto tokens = split(name.substr(kPrefix.size()), '_');
    // The backend is everything before the precision token (a backend name could contain '_').
    auto precision = std::find_if(tokens.begin(), tokens.end(),
                                  [](std::string_view t) { return contains(kPrecisions, t); });
    std::size_t p = static_cast<std::size_t>(precision - tokens.begin());
    if (precision == tokens.end() || p == 0) {
        // "solutions_cuda": PKB's default folder, a backend and nothing else.
        if (tokens.size() == 1 && !tokens[0].empty())
            result.backend = std::string(tokens[0]);
        return result;
    }
    result.backend = join(tokens, 0, p);
    result.precision = std::string(tokens[p]);
    // At least one hardware token, then the provider, then a non-empty model.
    std::size_t hardware = p + 1;
    for (std::size_t i = hardware + 1; i + 1 < tokens.size(); ++i) {
        if (contains(kProviders, tokens[i])) {
            result.hardware = join(tokens, hardware, i);
            result.provider = std::string(tokens[i]);
            result.model = join(tokens, i + 1, tokens.size());
            result.parsed = !result.model.empty() && !result.hardware.empty();
            break;
        }
    }
    // An unknown provider after "none" (PKB's default hardware) is still unambiguous.
    if (!result.parsed && tokens.size() >= hardware + 3 && tokens[hardware] == "none") {
        result.hardware = "none";
        result.provider = std::string(tokens[hardware + 1]);
        result.model = join(tokens, hardware + 2, tokens.size());
        result.parsed = !result.provider.empty() && !result.model.empty();
    }
    if (!result.parsed) {
        result.hardware.clear();
        result.provider.clear();
        result.model.clear();
    }
    return result;
}

} // namespace pkbw
