#include "safety.h"

#include <cstdlib>
#include <vector>

namespace pkbw::cli {
namespace {

// The variables that turn NVLink multicast off, and the value that does.
constexpr std::pair<const char*, const char*> kMulticastSwitches[] = {
    {"NCCL_NVLS_ENABLE", "0"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}, {"NVSHMEM_DISABLE_NVLS", "1"}};

void blank(std::string& text, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end && i < text.size(); ++i)
        if (text[i] != '\n')
            text[i] = ' ';
}

bool identifier_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// C/C++/CUDA: comments blanked. String literals are kept: inline PTX lives in them. A raw string
// literal (R"delim(...)delim") is kept whole, comment markers and all.
std::string strip_c_comments(std::string_view source) {
    std::string out(source);
    enum { Code, Line, Block, String, Char } state = Code;
    for (std::size_t i = 0; i < out.size(); ++i) {
        char c = out[i];
        char next = i + 1 < out.size() ? out[i + 1] : '\0';
        switch (state) {
        case Code:
            if (c == '/' && next == '/') {
                state = Line;
                out[i] = ' ';
            } else if (c == '/' && next == '*') {
                state = Block;
                out[i] = out[i + 1] = ' ';
                ++i;
            } else if (c == '"' && i > 0 && out[i - 1] == 'R' &&
                       (i < 2 || !identifier_char(out[i - 2]) || out[i - 2] == '8' || out[i - 2] == 'L' ||
                        out[i - 2] == 'u' || out[i - 2] == 'U')) {
                const std::size_t open = out.find('(', i + 1);
                if (open == std::string::npos || open - i > 17) {
                    state = String;
                    break;
                }
                const std::string closing = ")" + out.substr(i + 1, open - i - 1) + "\"";
                const std::size_t end = out.find(closing, open + 1);
                i = end == std::string::npos ? out.size() : end + closing.size() - 1;
            } else if (c == '"') {
                state = String;
            } else if (c == '\'') {
                state = Char;
            }
            break;
        case Line:
            if (c == '\n')
                state = Code;
            else
                out[i] = ' ';
            break;
        case Block:
            if (c == '*' && next == '/') {
                out[i] = out[i + 1] = ' ';
                ++i;
                state = Code;
            } else if (c != '\n') {
                out[i] = ' ';
            }
            break;
        case String:
        case Char:
            if (c == '\\')
                ++i;
            else if ((state == String && c == '"') || (state == Char && c == '\'') || c == '\n')
                state = Code;
            break;
        }
    }
    return out;
}

bool string_prefix(std::string_view word) {
    if (word.size() > 2)
        return false;
    for (char c : word) {
        switch (c) {
        case 'r':
        case 'R':
        case 'b':
        case 'B':
        case 'u':
        case 'U':
        case 'f':
        case 'F':
            break;
        default:
            return false;
        }
    }
    return true;
}

// Python: `#` comments and docstrings blanked; every other string literal is kept with the C/C++
// comments inside it blanked (PKB solutions hand CUDA source to load_inline as strings).
std::string strip_python(std::string_view source) {
    std::string out(source);
    const std::size_t n = out.size();
    int depth = 0;               // open brackets: a newline inside them does not end the statement
    bool statement_start = true; // nothing but whitespace since the logical line began
    std::size_t i = 0;
    while (i < n) {
        const char c = out[i];
        if (c == '\n') {
            if (depth == 0)
                statement_start = true;
            ++i;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
            ++i;
            continue;
        }
        if (c == '\\' && (i + 1 < n && (out[i + 1] == '\n' || out[i + 1] == '\r'))) {
            i += 2; // an explicit line join: the statement goes on
            continue;
        }
        if (c == '#') {
            const std::size_t end = out.find('\n', i);
            blank(out, i, end == std::string::npos ? n : end);
            i = end == std::string::npos ? n : end;
            continue;
        }
        std::size_t quote = i;
        if (identifier_char(c)) {
            std::size_t end = i;
            while (end < n && identifier_char(out[end]))
                ++end;
            if (end < n && (out[end] == '"' || out[end] == '\'') &&
                string_prefix(std::string_view(out).substr(i, end - i))) {
                quote = end;
            } else {
                statement_start = false;
                i = end;
                continue;
            }
        } else if (c != '"' && c != '\'') {
            if (c == '(' || c == '[' || c == '{')
                ++depth;
            else if ((c == ')' || c == ']' || c == '}') && depth > 0)
                --depth;
            statement_start = false;
            ++i;
            continue;
        }
        // A string literal from `i` (its prefix) through its closing quote(s).
        const char q = out[quote];
        const bool triple = quote + 2 < n && out[quote + 1] == q && out[quote + 2] == q;
        const std::size_t content = quote + (triple ? 3 : 1);
        std::size_t j = content, content_end = n, end = n;
        while (j < n) {
            if (out[j] == '\\') {
                j += 2;
            } else if (triple && out[j] == q && j + 2 < n && out[j + 1] == q && out[j + 2] == q) {
                content_end = j;
                end = j + 3;
                break;
            } else if (!triple && (out[j] == q || out[j] == '\n')) {
                content_end = j;
                end = out[j] == q ? j + 1 : j;
                break;
            } else {
                ++j;
            }
        }
        std::size_t after = end;
        while (after < n && (out[after] == ' ' || out[after] == '\t' || out[after] == '\r'))
            ++after;
        const bool alone = after >= n || out[after] == '\n' || out[after] == '#' || out[after] == ';';
        if (statement_start && depth == 0 && alone) {
            blank(out, i, end); // a docstring, or a string used as a comment
        } else if (content_end > content) {
            const std::string inner =
                strip_c_comments(std::string_view(out).substr(content, content_end - content));
            out.replace(content, content_end - content, inner);
        }
        statement_start = false;
        i = end;
    }
    return out;
}

std::string trim(std::string_view text) {
    std::size_t begin = text.find_first_not_of(" \t\r");
    if (begin == std::string_view::npos)
        return {};
    std::size_t end = text.find_last_not_of(" \t\r");
    return std::string(text.substr(begin, end - begin + 1));
}

// "NCCL_NVLS_ENABLE=0" for each switch of `environment` that turns multicast off.
std::vector<std::string> disabling(const std::map<std::string, std::string>& environment) {
    std::vector<std::string> found;
    for (const auto& [name, off] : kMulticastSwitches) {
        auto it = environment.find(name);
        if (it != environment.end() && it->second == off)
            found.push_back(std::string(name) + "=" + off);
    }
    return found;
}

std::string joined(const std::vector<std::string>& parts) {
    std::string text;
    for (std::size_t i = 0; i < parts.size(); ++i)
        text += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
    return text;
}

} // namespace

SourceLanguage source_language(std::string_view path) {
    return path.ends_with(".py") ? SourceLanguage::Python : SourceLanguage::Cpp;
}

std::string code_only(std::string_view source, SourceLanguage language) {
    return language == SourceLanguage::Python ? strip_python(source) : strip_c_comments(source);
}

std::optional<SourceFinding> find_multicast_use(std::string_view source, SourceLanguage language) {
    static constexpr std::string_view kConstructs[] = {"multimem", "cuMulticast", "multicast_ptr"};
    std::string code = code_only(source, language);
    std::size_t start = 0;
    int line = 1;
    while (start <= code.size()) {
        std::size_t end = code.find('\n', start);
        if (end == std::string::npos)
            end = code.size();
        std::string_view text(code.data() + start, end - start);
        for (auto construct : kConstructs) {
            if (text.find(construct) != std::string_view::npos) {
                std::string original(source.substr(start, end - start));
                return SourceFinding{std::string(construct), line, trim(original).substr(0, 200)};
            }
        }
        start = end + 1;
        ++line;
    }
    return std::nullopt;
}

std::string multicast_disabled_reason(const std::map<std::string, std::string>& environment) {
    const auto found = disabling(environment);
    return found.empty() ? std::string() : found.front();
}

std::map<std::string, std::string> multicast_environment_here() {
    std::map<std::string, std::string> environment;
    for (const auto& [name, off] : kMulticastSwitches) {
        if (const char* value = std::getenv(name))
            environment[name] = value;
    }
    return environment;
}

std::string multicast_disabled_reason() {
    return multicast_disabled_reason(multicast_environment_here());
}

std::string multicast_refusal(const std::string& path, std::string_view source, const MulticastCheck& check) {
    if (check.backend == "host" || check.allowed)
        return {};
    const auto machine = disabling(check.machine);
    std::map<std::string, std::string> added; // what pkbw adds where the environment is silent
    for (const auto& [name, value] : check.pkbw_adds)
        if (!check.machine.count(name))
            added[name] = value;
    const auto by_pkbw = disabling(added);
    if (machine.empty() && by_pkbw.empty())
        return {};
    const auto finding = find_multicast_use(source, source_language(path));
    if (!finding)
        return {};
    std::string message = "refused: " + path + ":" + std::to_string(finding->line) +
                          " uses NVLink multicast (" + finding->construct + "): `" + finding->text + "`. ";
    if (!machine.empty())
        message += "Multicast is off on this machine: its environment sets " + joined(machine) +
                   " (pkbw passes that on to the ranks as it is), so the candidate would fault or hang here. "
                   "Run it on a machine with NVLink multicast (NVSwitch, where these variables are not set) "
                   "with --allow-multicast";
    else
        message += "pkbw cannot tell whether this machine has NVLink multicast (NVSwitch with its fabric "
                   "manager) and runs PKB solutions with it off (it sets " +
                   joined(by_pkbw) +
                   " for the ranks), where a multicast kernel would fault or hang. On a machine with NVLink "
                   "multicast, run it with --allow-multicast (pkbw then sets none of these)";
    return message;
}

} // namespace pkbw::cli
