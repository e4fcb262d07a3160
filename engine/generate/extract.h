// Choosing the code in a model's reply (docs/generate.md "Code block choice"). PKB takes the first
// ```python block, else the first bare ``` block, else the whole reply; pkbw instead reads every
// fenced block and takes the one in the requested language, so a reply that is prose, a ```cuda
// snippet and a ```python file yields the file, and a reply with no code is an error.
#pragma once

#include <string>
#include <vector>

namespace pkbw::generate {

struct CodeBlock {
    std::string language; // the fence's info word, lower case ("" for a bare fence)
    std::string code;     // without the fences, ending with '\n'
    bool terminated = true;
};

std::vector<CodeBlock> fenced_blocks(const std::string& reply);

enum class ExtractStatus { Ok, NoCode, Unterminated };

struct Extracted {
    ExtractStatus status = ExtractStatus::NoCode;
    std::string code;
    std::string note; // how the block was chosen when there was a choice, or why nothing was
    int blocks = 0;   // fenced blocks in the reply
};

// `language`: python, cuda or cpp. Rules, in order:
// 1. blocks tagged with the language (python: python/py/python3; cuda: cuda/cu, then cpp/c++;
//    cpp: cpp/c++/cxx/cc): the longest, when there are several (a full file beats a snippet);
// 2. otherwise bare (untagged) blocks: the longest;
// 3. otherwise NoCode (blocks in other languages only, or none at all).
// A block left open at the end of the reply (a cut reply) is Unterminated and never used.
Extracted extract_code(const std::string& reply, const std::string& language);

} // namespace pkbw::generate
