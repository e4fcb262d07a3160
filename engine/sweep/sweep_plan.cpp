#include "sweep_plan.h"

#include "pkbw/core/error.h"
#include "pkbw/core/generation.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <system_error>

namespace fs = std::filesystem;

namespace pkbw::cli {

std::vector<int> parse_problem_selection(const std::string& text, const std::vector<KnownProblem>& known) {
    std::set<int> ids;
    std::set<int> available;
    for (const auto& k : known)
        available.insert(k.id);
    if (text == "all")
        return {available.begin(), available.end()};
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, ',')) {
        int from = 0, to = 0;
        char dash = 0, rest = 0;
        std::stringstream one(part);
        if (part.find('-') != std::string::npos) {
            if (!(one >> from >> dash >> to) || dash != '-' || (one >> rest) || to < from)
                throw Error("--problems: cannot read '" + part + "' (use all, N, A-B or a comma list)");
        } else if (!(one >> from) || (one >> rest)) {
            throw Error("--problems: cannot read '" + part + "' (use all, N, A-B or a comma list)");
        } else {
            to = from;
        }
        for (int id = from; id <= to; ++id) {
            if (!available.count(id))
                throw Error("--problems: no problem " + std::to_string(id) +
                            " (known: " + std::to_string(*available.begin()) + "-" +
                            std::to_string(*available.rbegin()) + ")");
            ids.insert(id);
        }
    }
    if (ids.empty())
        throw Error("--problems: empty selection");
    return {ids.begin(), ids.end()};
}

namespace {

// Whether an unplaced file concerns the selected problems: its leading number is one of them, or its
// reason names one ("problem 1_allreduce is claimed by 2 files"), or it has no number to tell by.
bool concerns_selection(const std::string& file, const std::string& reason, const std::vector<int>& selected,
                        const std::map<int, const KnownProblem*>& by_id) {
    if (selected.size() >= by_id.size())
        return true;
    std::size_t digits = 0;
    while (digits < file.size() && std::isdigit(static_cast<unsigned char>(file[digits])))
        ++digits;
    if (digits == 0 || digits > 4)
        return true;
    const int number = std::stoi(file.substr(0, digits));
    // The reason names a selected problem: its stem, not the tail of another's ("2_allgather" in
    // "12_allgather_gemm").
    const auto names = [&reason](const std::string& stem) {
        for (auto at = reason.find(stem); at != std::string::npos; at = reason.find(stem, at + 1))
            if (at == 0 || !std::isdigit(static_cast<unsigned char>(reason[at - 1])))
                return true;
        return false;
    };
    for (int id : selected)
        if (id == number || names(by_id.at(id)->stem))
            return true;
    return false;
}

} // namespace

SweepPlan plan_sweep(const std::vector<fs::path>& generation_dirs, const std::vector<KnownProblem>& known,
                     const std::vector<int>& selected, const std::string& extension,
                     const std::map<std::string, std::string>& by_hand) {
    SweepPlan plan;
    const ProblemNames names(known);
    std::map<int, const KnownProblem*> by_id;
    for (const auto& k : known)
        by_id[k.id] = &k;
    int position = 0;
    std::set<std::string> labels;
    for (const auto& dir : generation_dirs) {
        std::error_code ec;
        if (!fs::is_directory(dir, ec))
            throw Error("--solutions-dir " + dir.string() + ": not a folder");
        const fs::path absolute = fs::weakly_canonical(fs::absolute(dir));
        const std::string label = parse_generation_label(absolute.string()).label;
        if (!labels.insert(label).second)
            throw Error("--solutions-dir " + dir.string() + ": generation " + label + " is given twice");
        std::vector<fs::path> files;
        for (const auto& entry : fs::directory_iterator(absolute, ec))
            if (entry.is_regular_file(ec))
                files.push_back(entry.path());
        std::sort(files.begin(), files.end());
        const FolderPlacement placement = place_files(files, names, extension, by_hand);
        for (const auto& [file, reason] : placement.unplaced)
            (concerns_selection(file, reason, selected, by_id) ? plan.unplaced : plan.unplaced_elsewhere)
                .push_back({label, file, reason});
        nlohmann::json& mapping = plan.mapping[label] = nlohmann::json::object();
        for (const auto& [stem, placed] : placement.placed)
            mapping[placed.file.filename().string()] = {
                {"problem", stem}, {"placed_by", placed.placed_by}, {"renumbered", placed.renumbered}};
        nlohmann::json missing = nlohmann::json::array();
        for (int id : selected) {
            const KnownProblem& problem = *by_id.at(id);
            auto found = placement.placed.find(problem.stem);
            if (found == placement.placed.end()) {
                missing.push_back(problem.stem);
                continue;
            }
            SweepPair pair;
            pair.generation_label = label;
            pair.problem_stem = problem.stem;
            pair.problem_id = problem.id;
            pair.solution_path = found->second.file.string();
            pair.placed_by = found->second.placed_by;
            pair.position = position++;
            plan.pairs.push_back(std::move(pair));
        }
        if (!missing.empty())
            plan.missing[label] = missing;
    }
    return plan;
}

} // namespace pkbw::cli
