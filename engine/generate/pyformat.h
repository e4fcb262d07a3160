// The two pieces of Python string semantics PKB's prompt assembly depends on, reproduced so that
// pkbw's prompts are byte-identical to kernelgen/generate_kernel.py's: str.format with named fields
// (no format specs, no conversions: PKB's templates use neither) and str.strip() with no argument.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace pkbw::generate {

// Python's `template.format(**values)`: "{name}" is replaced by values[name] (not re-formatted),
// "{{" and "}}" are literal braces. Throws pkbw::FormatError naming `where` for an unknown field, a
// single '}', an unclosed '{', or a field with a format spec / conversion / index.
std::string python_format(std::string_view template_text, const std::map<std::string, std::string>& values,
                          std::string_view where);

// Python's str.strip(): removes leading and trailing characters for which str.isspace() is true,
// decoding UTF-8 for the non-ASCII ones (U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029,
// U+202F, U+205F, U+3000) as well as ASCII \t\n\v\f\r, space and \x1c-\x1f.
std::string python_strip(std::string_view text);

// Python's text-mode read (Path.read_text()): UTF-8 with universal newlines, so "\r\n" and a lone
// "\r" become "\n". Throws pkbw::Error naming the file when it cannot be read.
std::string read_text_universal(const std::string& path);

} // namespace pkbw::generate
