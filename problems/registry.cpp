#include "pkbw/problems/registry.h"

#include "problem_util.h"

#include <algorithm>
#include <charconv>

namespace pkbw {

namespace {
std::vector<const Problem*>& extra_problems() {
    static std::vector<const Problem*> extras;
    return extras;
}
} // namespace

void register_extra_problem(const Problem& problem) {
    extra_problems().push_back(&problem);
}

const std::vector<const Problem*>& all_problems() {
    static const std::vector<const Problem*> list = [] {
        auto problems = problems::generated_problems();
        problems.insert(problems.end(), extra_problems().begin(), extra_problems().end());
        std::sort(problems.begin(), problems.end(),
                  [](const Problem* a, const Problem* b) { return a->info().id < b->info().id; });
        return problems;
    }();
    return list;
}

const Problem* find_problem(std::string_view number_or_stem) {
    std::string_view key = number_or_stem;
    if (key.size() > 3 && key.substr(key.size() - 3) == ".py") {
        key.remove_suffix(3);
    }
    if (key.empty()) {
        return nullptr;
    }
    int id = 0;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    const bool is_number = ec == std::errc() && end == key.data() + key.size();
    for (const Problem* problem : all_problems()) {
        if (is_number ? problem->info().id == id : problem->info().stem == key) {
            return problem;
        }
    }
    return nullptr;
}

std::string problem_folder(const Problem& problem) {
    return "problems/" + problem.info().stem;
}

} // namespace pkbw
