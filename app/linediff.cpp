#include "linediff.h"

#include <algorithm>

namespace pkbw::app {

std::vector<std::string> split_lines(std::string_view text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        std::string_view line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        lines.emplace_back(line);
        start = end + 1;
    }
    return lines;
}

std::vector<DiffLine> diff_lines(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    const int n = static_cast<int>(a.size()), m = static_cast<int>(b.size());
    const int max = n + m;
    const int offset = max + 1;
    std::vector<int> v(static_cast<std::size_t>(2 * max + 3), 0);
    // trace[d] is V after step d; backtracking walks it to recover the path.
    // trace[d] holds V[-d..d] after step d; backtracking walks it to recover the path. Its size grows
    // as D^2, so very different texts (D above kMaxEdits) are shown as one replacement instead.
    constexpr int kMaxEdits = 3000;
    std::vector<std::vector<int>> trace;
    int found_d = -1;
    for (int d = 0; d <= std::min(max, kMaxEdits) && found_d < 0; ++d) {
        for (int k = -d; k <= d; k += 2) {
            int x;
            if (k == -d || (k != d && v[static_cast<std::size_t>(offset + k - 1)] <
                                          v[static_cast<std::size_t>(offset + k + 1)])) {
                x = v[static_cast<std::size_t>(offset + k + 1)];
            } else {
                x = v[static_cast<std::size_t>(offset + k - 1)] + 1;
            }
            int y = x - k;
            while (x < n && y < m && a[static_cast<std::size_t>(x)] == b[static_cast<std::size_t>(y)]) {
                ++x;
                ++y;
            }
            v[static_cast<std::size_t>(offset + k)] = x;
            if (x >= n && y >= m) {
                found_d = d;
                break;
            }
        }
        trace.emplace_back(v.begin() + offset - d, v.begin() + offset + d + 1);
    }
    std::vector<DiffLine> out;
    if (found_d < 0) {
        for (int i = 0; i < n; ++i) {
            out.push_back({DiffOp::Delete, i, -1});
        }
        for (int j = 0; j < m; ++j) {
            out.push_back({DiffOp::Insert, -1, j});
        }
        return out;
    }
    int x = n, y = m;
    for (int d = found_d; d > 0; --d) {
        const std::vector<int>& slice = trace[static_cast<std::size_t>(d - 1)];
        auto prev = [&](int k) { return slice[static_cast<std::size_t>(k + d - 1)]; };
        const int k = x - y;
        const int prev_k = (k == -d || (k != d && prev(k - 1) < prev(k + 1))) ? k + 1 : k - 1;
        const int prev_x = prev(prev_k);
        const int prev_y = prev_x - prev_k;
        while (x > prev_x && y > prev_y) {
            out.push_back({DiffOp::Equal, --x, --y});
        }
        if (x == prev_x) {
            out.push_back({DiffOp::Insert, -1, --y});
        } else {
            out.push_back({DiffOp::Delete, --x, -1});
        }
    }
    while (x > 0 && y > 0) {
        out.push_back({DiffOp::Equal, --x, --y});
    }
    std::reverse(out.begin(), out.end());
    return out;
}

} // namespace pkbw::app
