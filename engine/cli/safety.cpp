#include "safety.h"

#include <cstdlib>

namespace pkbw::cli {
namespace {

// The source with comments blanked (newlines kept, so line numbers stay right). String literals are
// kept: inline PTX lives in them.
std::string strip_comments(std::string_view source) {
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

std::string trim(std::string_view text) {
    std::size_t begin = text.find_first_not_of(" \t\r");
    if (begin == std::string_view::npos)
        return {};
    std::size_t end = text.find_last_not_of(" \t\r");
    return std::string(text.substr(begin, end - begin + 1));
}

} // namespace

std::optional<SourceFinding> find_multicast_use(std::string_view source) {
    static constexpr std::string_view kConstructs[] = {"multimem", "cuMulticast", "multicast_ptr"};
    std::string code = strip_comments(source);
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
    auto nvls = environment.find("NCCL_NVLS_ENABLE");
    if (nvls != environment.end() && nvls->second == "0")
        return "NCCL_NVLS_ENABLE=0";
    auto symm = environment.find("TORCH_SYMM_MEM_DISABLE_MULTICAST");
    if (symm != environment.end() && symm->second == "1")
        return "TORCH_SYMM_MEM_DISABLE_MULTICAST=1";
    return {};
}

std::string multicast_disabled_reason() {
    std::map<std::string, std::string> environment;
    for (const char* name : {"NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST"}) {
        if (const char* value = std::getenv(name))
            environment[name] = value;
    }
    return multicast_disabled_reason(environment);
}

} // namespace pkbw::cli
