#include "pyformat.h"

#include "pkbw/core/error.h"

#include <fstream>
#include <sstream>

namespace pkbw::generate {

std::string python_format(std::string_view text, const std::map<std::string, std::string>& values,
                          std::string_view where) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (c == '{') {
            if (i + 1 < text.size() && text[i + 1] == '{') {
                out += '{';
                ++i;
                continue;
            }
            std::size_t close = text.find('}', i + 1);
            if (close == std::string_view::npos)
                throw FormatError(std::string(where) + ": single '{' encountered in format string");
            std::string name(text.substr(i + 1, close - i - 1));
            if (name.find_first_of(":![.{") != std::string::npos || name.empty())
                throw FormatError(std::string(where) + ": unsupported replacement field {" + name +
                                  "} (only named fields are supported)");
            auto found = values.find(name);
            if (found == values.end())
                throw FormatError(std::string(where) + ": unknown placeholder {" + name + "}");
            out += found->second;
            i = close;
        } else if (c == '}') {
            if (i + 1 < text.size() && text[i + 1] == '}') {
                out += '}';
                ++i;
                continue;
            }
            throw FormatError(std::string(where) + ": single '}' encountered in format string");
        } else {
            out += c;
        }
    }
    return out;
}

namespace {

bool ascii_space(unsigned char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

bool unicode_space(char32_t cp) {
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Length of the whitespace character starting at `pos`, or 0.
std::size_t space_at(std::string_view s, std::size_t pos) {
    auto c = static_cast<unsigned char>(s[pos]);
    if (ascii_space(c))
        return 1;
    if (c == 0xC2 && pos + 1 < s.size()) {
        auto c1 = static_cast<unsigned char>(s[pos + 1]);
        return unicode_space(c1) ? 2 : 0;
    }
    if ((c == 0xE1 || c == 0xE2 || c == 0xE3) && pos + 2 < s.size()) {
        char32_t cp = ((c & 0x0F) << 12) | ((static_cast<unsigned char>(s[pos + 1]) & 0x3F) << 6) |
                      (static_cast<unsigned char>(s[pos + 2]) & 0x3F);
        return unicode_space(cp) ? 3 : 0;
    }
    return 0;
}

// Length of the whitespace character ending just before `end`, or 0.
std::size_t space_before(std::string_view s, std::size_t end) {
    if (end >= 1 && ascii_space(static_cast<unsigned char>(s[end - 1])))
        return 1;
    if (end >= 2 && space_at(s, end - 2) == 2)
        return 2;
    if (end >= 3 && space_at(s, end - 3) == 3)
        return 3;
    return 0;
}

} // namespace

std::string python_strip(std::string_view text) {
    std::size_t begin = 0, end = text.size();
    while (begin < end) {
        std::size_t n = space_at(text, begin);
        if (n == 0)
            break;
        begin += n;
    }
    while (end > begin) {
        std::size_t n = space_before(text, end);
        if (n == 0)
            break;
        end -= n;
    }
    return std::string(text.substr(begin, end - begin));
}

std::string read_text_universal(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("cannot read " + path);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    std::string raw = buffer.str();
    std::string out;
    out.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\r') {
            out += '\n';
            if (i + 1 < raw.size() && raw[i + 1] == '\n')
                ++i;
        } else {
            out += raw[i];
        }
    }
    return out;
}

} // namespace pkbw::generate
