#include "sweep_plan.h"

#include "pkbw/core/error.h"
#include "pkbw/core/generation.h"
#include "pkbw/problems/registry.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

namespace fs = std::filesystem;

namespace pkbw::cli {
namespace {

std::optional<int> leading_number(const std::string& stem) {
    std::size_t digits = 0;
    while (digits < stem.size() && std::isdigit(static_cast<unsigned char>(stem[digits])))
        ++digits;
    if (digits == 0 || digits > 6 || digits >= stem.size() || stem[digits] != '_')
        return std::nullopt;
    return std::stoi(stem.substr(0, digits));
}

// "gemm_allgather_AT" and "allgather_gemm_AT" name the same problem in PKB's history (the words were
// reordered); compared as sorted word lists, case-insensitively.
std::string sorted_tokens(const std::string& name) {
    std::vector<std::string> tokens;
    std::stringstream in(name);
    std::string token;
    while (std::getline(in, token, '_')) {
        std::transform(token.begin(), token.end(), token.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        if (!token.empty())
            tokens.push_back(token);
    }
    std::sort(tokens.begin(), tokens.end());
    std::string joined;
    for (const auto& t : tokens)
        joined += t + "_";
    return joined;
}

const char* const kSolutionExtensions[] = {".cu", ".cpp", ".py"};

} // namespace

std::string name_without_number(const std::string& stem) {
    if (!leading_number(stem))
        return stem;
    return stem.substr(stem.find('_') + 1);
}

std::vector<KnownProblem> native_problems() {
    std::vector<KnownProblem> list;
    for (const Problem* p : all_problems())
        list.push_back({p->info().id, p->info().stem});
    return list;
}

std::vector<KnownProblem> pkb_checkout_problems(const fs::path& checkout) {
    std::vector<KnownProblem> list;
    std::error_code ec;
    const fs::path dir = checkout / "reference";
    if (!fs::is_directory(dir, ec))
        throw Error("--pkb-checkout " + checkout.string() + ": no reference/ folder");
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.path().extension() != ".py")
            continue;
        const std::string stem = entry.path().stem().string();
        if (auto id = leading_number(stem))
            list.push_back({*id, stem});
    }
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    return list;
}

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

SweepPlan plan_sweep(const std::vector<fs::path>& generation_dirs, const std::vector<KnownProblem>& known,
                     const std::vector<int>& selected, const std::string& extension,
                     const std::map<std::string, std::string>& by_hand) {
    SweepPlan plan;
    std::map<std::string, const KnownProblem*> by_name;
    std::multimap<std::string, const KnownProblem*> by_tokens; // 12_allgather_gemm, 14_gemm_allgather
    std::map<int, const KnownProblem*> by_id;
    for (const auto& k : known) {
        by_name[name_without_number(k.stem)] = &k;
        by_tokens.emplace(sorted_tokens(name_without_number(k.stem)), &k);
        by_id[k.id] = &k;
    }
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
        struct Claim {
            fs::path file;
            int number = 0;
            std::string placed_by;
        };
        std::map<std::string, std::vector<Claim>> claims; // problem stem -> the files placed there
        std::map<std::string, const KnownProblem*> problem_of;
        for (const auto& file : files) {
            const std::string ext = file.extension().string();
            if (std::find(std::begin(kSolutionExtensions), std::end(kSolutionExtensions), ext) ==
                std::end(kSolutionExtensions))
                continue;
            const std::string stem = file.stem().string();
            const auto number = leading_number(stem);
            if (!number)
                continue; // __init__.py, helpers: not a solution
            const std::string name = file.filename().string();
            if (ext != extension) {
                plan.unplaced.push_back(
                    {label, name, "a " + ext + " file; this sweep's backend runs " + extension});
                continue;
            }
            // <number>_<problem name>_<backend>: the backend is the last word.
            const std::string rest = name_without_number(stem);
            const auto cut = rest.rfind('_');
            if (cut == std::string::npos) {
                plan.unplaced.push_back({label, name, "no backend suffix (<n>_<name>_<backend>" + ext + ")"});
                continue;
            }
            const std::string problem_name = rest.substr(0, cut);
            const std::string words = sorted_tokens(problem_name);
            const KnownProblem* own = by_id.count(*number) ? by_id.at(*number) : nullptr;
            const bool own_same_words = own && sorted_tokens(name_without_number(own->stem)) == words;
            const auto exact = by_name.find(problem_name);
            const KnownProblem* problem = nullptr;
            std::string placed_by, reason;
            if (auto hand = by_hand.find(name); hand != by_hand.end()) {
                for (const auto& k : known)
                    if (k.stem == hand->second || std::to_string(k.id) == hand->second)
                        problem = &k;
                if (!problem)
                    throw Error("--place " + name + "=" + hand->second + ": no such problem");
                placed_by = "by hand";
            } else if (exact != by_name.end() && exact->second == own) {
                problem = own;
                placed_by = "name";
            } else if (exact != by_name.end() && own_same_words) {
                // PKB reused names: its solutions' 12_gemm_allgather is the reference 12_allgather_gemm,
                // while 14_gemm_allgather is another problem. Name and number disagree: not guessed.
                reason = "ambiguous: the name is problem " + exact->second->stem + "'s, the number " +
                         std::to_string(*number) + " is " + own->stem + " (same words); not placed";
            } else if (exact != by_name.end()) {
                problem = exact->second;
                placed_by = "name";
            } else if (own_same_words && by_tokens.count(words) >= 1) {
                problem = own;
                placed_by = "name tokens";
            } else {
                reason = "no problem is named '" + problem_name + "'";
                if (own)
                    reason += " (problem " + std::to_string(*number) + " here is " + own->stem +
                              "; a number alone never places a file)";
            }
            if (!problem) {
                plan.unplaced.push_back({label, name, reason});
                continue;
            }
            claims[problem->stem].push_back({file, *number, placed_by});
            problem_of[problem->stem] = problem;
        }
        // One file per problem: of several claims, the one whose number is the problem's, if just one.
        std::map<std::string, std::pair<fs::path, std::string>> placed;
        nlohmann::json& mapping = plan.mapping[label] = nlohmann::json::object();
        for (const auto& [stem, list] : claims) {
            const KnownProblem* problem = problem_of.at(stem);
            const Claim* chosen = list.size() == 1 ? &list[0] : nullptr;
            if (!chosen) {
                int same_number = 0;
                for (const auto& c : list)
                    if (c.number == problem->id) {
                        chosen = &c;
                        ++same_number;
                    }
                if (same_number != 1)
                    chosen = nullptr;
            }
            for (const auto& c : list) {
                if (&c == chosen)
                    continue;
                plan.unplaced.push_back(
                    {label, c.file.filename().string(),
                     "problem " + stem + " is claimed by " + std::to_string(list.size()) +
                         " files of this folder" +
                         (chosen ? "; " + chosen->file.filename().string() + " is used" : "")});
            }
            if (!chosen)
                continue;
            placed[stem] = {chosen->file, chosen->placed_by};
            mapping[chosen->file.filename().string()] = {{"problem", stem},
                                                         {"placed_by", chosen->placed_by},
                                                         {"renumbered", chosen->number != problem->id}};
        }
        nlohmann::json missing = nlohmann::json::array();
        for (int id : selected) {
            const KnownProblem& problem = *by_id.at(id);
            auto found = placed.find(problem.stem);
            if (found == placed.end()) {
                missing.push_back(problem.stem);
                continue;
            }
            SweepPair pair;
            pair.generation_label = label;
            pair.problem_stem = problem.stem;
            pair.problem_id = problem.id;
            pair.solution_path = found->second.first.string();
            pair.placed_by = found->second.second;
            pair.position = position++;
            plan.pairs.push_back(std::move(pair));
        }
        if (!missing.empty())
            plan.missing[label] = missing;
    }
    return plan;
}

} // namespace pkbw::cli
