#include "pkb_prompt.h"

#include "pkbw/core/error.h"
#include "pyformat.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <toml++/toml.h>

namespace pkbw::generate {

namespace fs = std::filesystem;

std::string pkb_model_slug(const std::string& model) {
    // strip() of the model id, then the substitutions in PKB's order.
    std::string trimmed = python_strip(model);
    std::string slug;
    bool in_run = false;
    for (char c : trimmed) {
        if (c == '/')
            c = '_';
        bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
        if (static_cast<unsigned char>(c) >= 0x80)
            keep = false;
        if (keep) {
            slug += c;
            in_run = false;
        } else if (!in_run) {
            slug += '_';
            in_run = true;
        }
    }
    std::string collapsed;
    for (char c : slug)
        if (!(c == '_' && !collapsed.empty() && collapsed.back() == '_'))
            collapsed += c;
    std::size_t begin = collapsed.find_first_not_of('_');
    std::size_t end = collapsed.find_last_not_of('_');
    collapsed = begin == std::string::npos ? "" : collapsed.substr(begin, end - begin + 1);
    if (collapsed.empty())
        collapsed = "model";
    return collapsed.substr(0, 72);
}

std::string pkb_output_dir(const std::string& backend, const std::string& precision,
                           const std::optional<std::string>& hardware, const std::string& provider,
                           const std::string& model) {
    return "solutions_" + backend + "_" + precision + "_" + (hardware ? *hardware : "none") + "_" + provider +
           "_" + pkb_model_slug(model);
}

struct PkbPrompts::Impl {
    fs::path checkout;
    fs::path toml_path;
    toml::table config;

    std::string where(const std::string& key) const { return toml_path.string() + ": " + key; }

    const toml::table& table(const toml::table& parent, const std::string& key,
                             const std::string& path) const {
        const toml::table* t = parent[key].as_table();
        if (t == nullptr)
            throw FormatError(where(path) + " is missing or not a table");
        return *t;
    }

    std::string string(const toml::table& parent, const std::string& key, const std::string& path) const {
        auto value = parent[key].value<std::string>();
        if (!value)
            throw FormatError(where(path) + " is missing or not a string");
        return *value;
    }

    // The parts of user_prompt (defined below, after the TOML helpers they use).
    using Context = std::map<std::string, std::string>;
    std::string hardware_body(const toml::table& templates, const std::string& profile_name) const;
    std::string example_entries(const toml::table& backend, const toml::table& common,
                                const std::string& backend_name, Context& ctx) const;
    std::string components_body(const toml::table& shared, const toml::table& common,
                                const Context& ctx) const;
};

PkbPrompts::PkbPrompts(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
PkbPrompts::PkbPrompts(PkbPrompts&&) noexcept = default;
PkbPrompts& PkbPrompts::operator=(PkbPrompts&&) noexcept = default;
PkbPrompts::~PkbPrompts() = default;

PkbPrompts PkbPrompts::load(const fs::path& checkout, const std::optional<fs::path>& prompts_toml) {
    auto impl = std::make_unique<Impl>();
    impl->checkout = checkout;
    impl->toml_path = prompts_toml ? *prompts_toml : checkout / "kernelgen" / "prompts.toml";
    if (!fs::is_regular_file(impl->toml_path))
        throw Error("prompt config not found: " + impl->toml_path.string() +
                    " (is --pkb-checkout a ParallelKernelBench checkout?)");
    try {
        // toml.load() reads the file in text mode: universal newlines first, as Python does.
        impl->config = toml::parse(read_text_universal(impl->toml_path.string()), impl->toml_path.string());
    } catch (const toml::parse_error& error) {
        std::ostringstream message;
        message << impl->toml_path.string() << ":" << error.source().begin.line << ":"
                << error.source().begin.column << ": " << error.description();
        throw FormatError(message.str());
    }
    return PkbPrompts(std::move(impl));
}

const fs::path& PkbPrompts::checkout() const {
    return impl_->checkout;
}

std::string PkbPrompts::default_backend() const {
    return impl_->config["meta"]["default_backend"].value_or(std::string("cuda"));
}

namespace {
std::vector<std::string> keys_of(const toml::node_view<const toml::node> node) {
    std::vector<std::string> keys;
    if (const toml::table* t = node.as_table())
        for (const auto& [key, value] : *t)
            keys.emplace_back(key.str());
    return keys;
}

// Python's str(v) for the scalar types a hardware profile may hold.
std::string python_str(const toml::node& node) {
    if (auto s = node.value_exact<std::string>())
        return *s;
    if (auto i = node.value_exact<std::int64_t>())
        return std::to_string(*i);
    if (auto b = node.value_exact<bool>())
        return *b ? "True" : "False";
    if (auto d = node.value_exact<double>()) {
        std::ostringstream out;
        out.precision(17);
        out << *d;
        return out.str();
    }
    throw FormatError("hardware profile value of unsupported type (strings, integers, booleans, floats)");
}
} // namespace

std::vector<std::string> PkbPrompts::backends() const {
    return keys_of(std::as_const(impl_->config)["backends"]);
}
std::vector<std::string> PkbPrompts::precisions() const {
    return keys_of(std::as_const(impl_->config)["precision"]);
}
std::vector<std::string> PkbPrompts::hardware_profiles() const {
    return keys_of(std::as_const(impl_->config)["hardware_profiles"]);
}

std::vector<std::string> PkbPrompts::resolve_problems(const std::string& argument) const {
    const fs::path reference = impl_->checkout / "reference";
    auto all_stems = [&] {
        std::vector<std::string> stems;
        if (fs::is_directory(reference))
            for (const auto& entry : fs::directory_iterator(reference))
                if (entry.path().extension() == ".py" && entry.is_regular_file())
                    stems.push_back(entry.path().stem().string());
        std::sort(stems.begin(), stems.end());
        return stems;
    };
    auto resolve_one = [&](std::string raw) -> std::string {
        raw = python_strip(raw);
        if (raw.ends_with(".py"))
            raw = python_strip(raw.substr(0, raw.size() - 3));
        if (raw.empty())
            throw Error("problem cannot be empty");
        if (std::all_of(raw.begin(), raw.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            if (!fs::is_directory(reference))
                return raw;
            std::vector<std::string> matches;
            for (const auto& entry : fs::directory_iterator(reference)) {
                std::string name = entry.path().filename().string();
                if (name.starts_with(raw + "_") && name.ends_with(".py"))
                    matches.push_back(name.substr(0, name.size() - 3));
            }
            if (matches.empty())
                throw Error("no reference problem starting with " + raw + "_ in " + reference.string());
            return *std::min_element(matches.begin(), matches.end());
        }
        return raw;
    };
    std::string raw = python_strip(argument);
    std::string lower = raw;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (lower == "all") {
        auto stems = all_stems();
        if (stems.empty())
            throw Error("no *.py files in " + reference.string());
        return stems;
    }
    if (raw.size() >= 2 && raw.front() == '[' && raw.back() == ']') {
        std::vector<std::string> stems;
        std::stringstream parts(raw.substr(1, raw.size() - 2));
        std::string part;
        while (std::getline(parts, part, ','))
            if (!python_strip(part).empty()) {
                std::string stem = resolve_one(part);
                if (std::find(stems.begin(), stems.end(), stem) == stems.end())
                    stems.push_back(stem);
            }
        if (stems.empty())
            throw Error("empty problem list in [...]");
        return stems;
    }
    return {resolve_one(raw)};
}

// The hardware section's body for a profile: its header, then its specs, definitions and best practices
// filled with the profile's values (a section without a profile strips to nothing and is dropped).
std::string PkbPrompts::Impl::hardware_body(const toml::table& templates,
                                            const std::string& profile_name) const {
    std::string hardware_body;
    const toml::table* profiles = config["hardware_profiles"].as_table();
    const toml::table* profile = profiles ? (*profiles)[profile_name].as_table() : nullptr;
    if (profile == nullptr) {
        std::string have;
        for (const auto& key : keys_of(std::as_const(config)["hardware_profiles"]))
            have += (have.empty() ? "" : ", ") + key;
        throw FormatError(where("hardware_profiles." + profile_name) + " missing (have: " + have + ")");
    }
    std::map<std::string, std::string> profile_values;
    for (const auto& [key, value] : *profile)
        profile_values[std::string(key.str())] = python_str(value);
    const toml::table& hw = table(templates, "hardware", "[templates.hardware]");
    std::vector<std::string> parts{
        python_strip(string(hw, "hardware_header", "templates.hardware.hardware_header"))};
    for (const char* key : {"hardware_specs", "hardware_definitions", "hardware_best_practices"})
        parts.push_back(python_format(string(hw, key, std::string("templates.hardware.") + key),
                                      profile_values, where(std::string("templates.hardware.") + key)));
    for (const auto& part : parts)
        if (!part.empty())
            hardware_body += (hardware_body.empty() ? "" : "\n\n") + part;
    return hardware_body;
}

// The in-context examples: their introduction into ctx["examples_intro"], and each example's entry
// (its PyTorch and custom solutions read from the checkout) joined, returned.
std::string PkbPrompts::Impl::example_entries(const toml::table& backend, const toml::table& common,
                                              const std::string& backend_name, Context& ctx) const {
    const toml::array* examples = backend["in_context_examples"].as_array();
    if (examples == nullptr || examples->empty())
        throw FormatError(where("backends." + backend_name + ".in_context_examples") +
                          " must be a non-empty list");
    const char* intro_key = examples->size() == 1 ? "example_intro_one_shot" : "example_intro_few_shot";
    ctx["examples_intro"] =
        python_format(string(common, intro_key, std::string("templates.common.") + intro_key), ctx,
                      where(std::string("templates.common.") + intro_key));
    const std::string entry_template =
        string(common, "example_entry_template", "templates.common.example_entry_template");
    std::string entries;
    for (std::size_t i = 0; i < examples->size(); ++i) {
        std::string key = "backends." + backend_name + ".in_context_examples[" + std::to_string(i) + "]";
        const toml::table* example = (*examples)[i].as_table();
        if (example == nullptr)
            throw FormatError(where(key) + " must be a table");
        auto block = ctx;
        auto label = (*example)["label"].value<std::string>();
        block["example_label"] = label && !label->empty() ? *label : "Example " + std::to_string(i + 1);
        for (const auto& [field, placeholder] :
             {std::pair{"pytorch_solution", "input_code"}, std::pair{"custom_solution", "output_code"}}) {
            auto relative = (*example)[field].value<std::string>();
            if (!relative)
                throw FormatError(where(key) + " missing '" + field + "'");
            fs::path file = checkout / *relative;
            if (!fs::is_regular_file(file))
                throw Error("referenced file not found: " + file.string() + " (" + key + "." + field + ")");
            block[placeholder] = read_text_universal(file.string());
        }
        entries += (i == 0 ? "" : "\n\n") +
                   python_format(entry_template, block, where("templates.common.example_entry_template"));
    }
    return entries;
}

// The prompt's components in the configured order, each from [shared] or [templates.common], filled
// and stripped; empty ones left out.
std::string PkbPrompts::Impl::components_body(const toml::table& shared, const toml::table& common,
                                              const Context& ctx) const {
    const toml::array* components = config["options"]["generate_kernel"]["components"].as_array();
    if (components == nullptr)
        throw FormatError(where("options.generate_kernel.components") + " is missing or not a list");
    std::string body;
    for (const auto& component : *components) {
        auto name = component.value<std::string>();
        if (!name)
            throw FormatError(where("options.generate_kernel.components") + " holds a non-string");
        std::string rendered;
        if (auto text = shared[*name].value<std::string>())
            rendered = python_format(*text, ctx, where("shared." + *name));
        else if (auto text2 = common[*name].value<std::string>())
            rendered = python_format(*text2, ctx, where("templates.common." + *name));
        else
            throw FormatError(where("options.generate_kernel.components") + ": unknown prompt component '" +
                              *name + "'");
        rendered = python_strip(rendered);
        if (!rendered.empty())
            body += (body.empty() ? "" : "\n\n") + rendered;
    }
    return body;
}

std::string PkbPrompts::user_prompt(const PkbPromptRequest& request) const {
    const Impl& im = *impl_;
    const toml::table& cfg = im.config;
    const toml::table& backends = im.table(cfg, "backends", "[backends]");
    const toml::table& backend = im.table(backends, request.backend, "[backends." + request.backend + "]");
    const toml::table& precisions = im.table(cfg, "precision", "[precision]");
    const toml::table& precision =
        im.table(precisions, request.precision, "[precision." + request.precision + "]");
    const toml::table& templates = im.table(cfg, "templates", "[templates]");
    const toml::table& common = im.table(templates, "common", "[templates.common]");
    const toml::table& shared = im.table(cfg, "shared", "[shared]");

    std::map<std::string, std::string> ctx;
    ctx["backend_display"] =
        im.string(backend, "backend_display", "backends." + request.backend + ".backend_display");
    ctx["precision_display"] =
        im.string(precision, "precision_display", "precision." + request.precision + ".precision_display");
    const fs::path reference = im.checkout / "reference" / (request.stem + ".py");
    if (!fs::is_regular_file(reference))
        throw Error("reference file not found: " + reference.string());
    ctx["ref_arch_src"] = read_text_universal(reference.string());
    // Empty without a profile: its section then strips to nothing and is dropped.
    ctx["hardware_context_body"] = request.hardware ? im.hardware_body(templates, *request.hardware) : "";
    // Each example's entry is filled from ctx as it stands, before ctx holds the entries.
    const std::string entries = im.example_entries(backend, common, request.backend, ctx);
    ctx["examples_entries"] = entries;

    const std::string body = im.components_body(shared, common, ctx);
    return body + "\nThe generated file will be saved as: " + request.solution_relative_path +
           "\nProduce the complete Python file contents for that path.";
}

namespace {
// The script's built-in SYSTEM_PROMPT, read from the checkout's generate_kernel.py rather than copied
// here, so it follows PKB's edits. Empty when the file or the assignment is not found.
std::string builtin_system_prompt(const fs::path& checkout) {
    fs::path script = checkout / "kernelgen" / "generate_kernel.py";
    if (!fs::is_regular_file(script))
        return {};
    std::string text = read_text_universal(script.string());
    const std::string marker = "\nSYSTEM_PROMPT = \"\"\"";
    std::size_t start = text.find(marker);
    if (start == std::string::npos)
        return {};
    start += marker.size();
    std::size_t end = text.find("\"\"\"", start);
    if (end == std::string::npos)
        return {};
    std::string body = text.substr(start, end - start);
    if (body.find('\\') != std::string::npos)
        return {}; // escapes would need Python's string rules; none today
    return body;
}
} // namespace

std::string PkbPrompts::system_prompt(const std::string& backend) const {
    auto custom = impl_->config["backends"][backend]["generate_kernel_system_prompt"].value<std::string>();
    if (custom && !python_strip(*custom).empty())
        return python_strip(*custom);
    std::string builtin = builtin_system_prompt(impl_->checkout);
    if (!builtin.empty())
        return builtin;
    return "You are an expert CUDA and distributed systems engineer. Write a faster drop-in replacement "
           "for the reference solution() that runs on every rank, keeping its signature and its results.";
}

std::string PkbPrompts::print_block(const std::string& stem, const std::string& prompt) {
    const std::string rule(72, '=');
    return rule + "\nPROBLEM " + stem + "\n" + rule + "\n" + prompt + "\n";
}

} // namespace pkbw::generate
