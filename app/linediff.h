// Line diff between two sources (Myers' O(ND) algorithm): generations of one solution differ in a
// few lines, so D is small and the diff is fast even for long files. docs/gui.md says why this is
// written here rather than taken from a library.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pkbw::app {

enum class DiffOp { Equal, Delete, Insert };

struct DiffLine {
    DiffOp op = DiffOp::Equal;
    int left = -1;  // 0-based line in the left text, -1 for an insertion
    int right = -1; // 0-based line in the right text, -1 for a deletion
};

std::vector<std::string> split_lines(std::string_view text);
// A shortest edit script in text order.
std::vector<DiffLine> diff_lines(const std::vector<std::string>& left, const std::vector<std::string>& right);

} // namespace pkbw::app
