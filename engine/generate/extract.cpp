#include "extract.h"

#include <algorithm>
#include <sstream>

namespace pkbw::generate {

std::vector<CodeBlock> fenced_blocks(const std::string& reply) {
    std::vector<CodeBlock> blocks;
    std::istringstream lines(reply);
    std::string line;
    bool inside = false;
    CodeBlock current;
    while (std::getline(lines, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        std::size_t indent = line.find_first_not_of(' ');
        bool fence = indent != std::string::npos && indent <= 3 && line.compare(indent, 3, "```") == 0;
        if (!inside && fence) {
            std::string info = line.substr(indent + 3);
            info.erase(0, info.find_first_not_of(" \t"));
            info = info.substr(0, info.find_first_of(" \t{"));
            std::transform(info.begin(), info.end(), info.begin(),
                           [](unsigned char c) { return std::tolower(c); });
            if (info.find('`') != std::string::npos) {
                continue; // inline ```like this``` on one line is not a fence
            }
            current = CodeBlock{info, "", false};
            inside = true;
        } else if (inside && fence && line.find_first_not_of(" `\t") == std::string::npos) {
            current.terminated = true;
            blocks.push_back(current);
            inside = false;
        } else if (inside) {
            current.code += line + "\n";
        }
    }
    if (inside)
        blocks.push_back(current); // terminated = false
    return blocks;
}

namespace {
int rank_for(const std::string& tag, const std::string& language) {
    // 2: the language's own tags; 1: an acceptable alternative; 0: no.
    if (language == "python")
        return tag == "python" || tag == "py" || tag == "python3" ? 2 : 0;
    if (language == "cuda")
        return tag == "cuda" || tag == "cu" ? 2 : (tag == "cpp" || tag == "c++" || tag == "cxx") ? 1 : 0;
    if (language == "cpp")
        return tag == "cpp" || tag == "c++" || tag == "cxx" || tag == "cc" ? 2 : 0;
    return tag == language ? 2 : 0;
}
} // namespace

Extracted extract_code(const std::string& reply, const std::string& language) {
    Extracted out;
    auto blocks = fenced_blocks(reply);
    out.blocks = static_cast<int>(blocks.size());
    // The best-ranked tag wins; among blocks of that rank (or the untagged ones), the longest.
    int best_rank = 0;
    for (const auto& block : blocks)
        if (block.terminated)
            best_rank = std::max(best_rank, rank_for(block.language, language));
    const CodeBlock* best = nullptr;
    int candidates = 0;
    for (const auto& block : blocks) {
        if (!block.terminated)
            continue;
        bool eligible =
            best_rank > 0 ? rank_for(block.language, language) == best_rank : block.language.empty();
        if (!eligible)
            continue;
        ++candidates;
        if (best == nullptr || block.code.size() > best->code.size())
            best = &block;
    }
    if (best) {
        out.status = ExtractStatus::Ok;
        out.code = best->code;
        if (best_rank == 0)
            out.note = "no ```" + language + " block; took the longest untagged block";
        else if (candidates > 1)
            out.note = std::to_string(candidates) + " ```" + language + " blocks; took the longest";
        return out;
    }
    bool open = std::any_of(blocks.begin(), blocks.end(), [](const CodeBlock& b) { return !b.terminated; });
    out.status = open ? ExtractStatus::Unterminated : ExtractStatus::NoCode;
    if (open)
        out.note = "the reply ends inside an open code fence";
    else if (blocks.empty())
        out.note = "the reply has no fenced code block";
    else
        out.note = "no ```" + language + " block (the reply has " + std::to_string(blocks.size()) +
                   " block(s) in other languages)";
    return out;
}

} // namespace pkbw::generate
