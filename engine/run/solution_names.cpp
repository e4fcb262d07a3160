#include "solution_names.h"

#include "pkbw/core/error.h"
#include "pkbw/problems/registry.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <system_error>
#include <tuple>

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

ProblemNames::ProblemNames(const std::vector<KnownProblem>& known)
    : known_(known) {
    for (const auto& k : known_) {
        by_name_[name_without_number(k.stem)] = &k;
        by_id_[k.id] = &k;
    }
}

NamePlacement ProblemNames::place(int number, const std::string& problem_name) const {
    NamePlacement result;
    const std::string words = sorted_tokens(problem_name);
    const auto id = by_id_.find(number);
    const KnownProblem* own = id != by_id_.end() ? id->second : nullptr;
    const bool own_same_words = own && sorted_tokens(name_without_number(own->stem)) == words;
    const auto exact = by_name_.find(problem_name);
    if (exact != by_name_.end() && exact->second == own) {
        result.problem = own;
        result.placed_by = "name";
    } else if (exact != by_name_.end() && own_same_words) {
        // PKB reused names: its solutions' 12_gemm_allgather is the reference 12_allgather_gemm,
        // while 14_gemm_allgather is another problem. Name and number disagree: not guessed.
        result.named = exact->second;
        result.numbered = own;
        result.reason = "ambiguous: the name is problem " + exact->second->stem + "'s, the number " +
                        std::to_string(number) + " is " + own->stem + " (same words); not placed";
    } else if (exact != by_name_.end()) {
        result.problem = exact->second;
        result.placed_by = "name";
    } else if (own_same_words) {
        // No problem has the name, but the number's problem has its words in another order.
        result.problem = own;
        result.placed_by = "name tokens";
    } else {
        result.reason = "no problem is named '" + problem_name + "'";
        if (own)
            result.reason += " (problem " + std::to_string(number) + " here is " + own->stem +
                             "; a number alone never places a file)";
    }
    return result;
}

const KnownProblem* ProblemNames::find(const std::string& number_or_stem) const {
    const KnownProblem* found = nullptr;
    for (const auto& k : known_)
        if (k.stem == number_or_stem || std::to_string(k.id) == number_or_stem)
            found = &k;
    return found;
}

const KnownProblem* ProblemNames::by_stem(const std::string& stem) const {
    for (const auto& k : known_)
        if (k.stem == stem)
            return &k;
    return nullptr;
}

namespace {

// "<n>_<name>_<backend>": the name, with `backend` the given word or (empty) the last one; nullopt
// when the stem has no such suffix.
std::optional<std::string> problem_name_of(const std::string& stem, const std::string& backend) {
    const std::string rest = name_without_number(stem);
    if (backend.empty()) {
        const auto cut = rest.rfind('_');
        if (cut == std::string::npos)
            return std::nullopt;
        return rest.substr(0, cut);
    }
    const std::string suffix = "_" + backend;
    if (rest.size() <= suffix.size() || !rest.ends_with(suffix))
        return std::nullopt;
    return rest.substr(0, rest.size() - suffix.size());
}

bool is_solution_extension(const std::string& ext) {
    return std::find(std::begin(kSolutionExtensions), std::end(kSolutionExtensions), ext) !=
           std::end(kSolutionExtensions);
}

} // namespace

FolderPlacement place_files(const std::vector<fs::path>& files, const ProblemNames& names,
                            const std::string& extension, const std::map<std::string, std::string>& by_hand,
                            const std::string& backend) {
    FolderPlacement result;
    struct Claim {
        fs::path file;
        int number = 0;
        std::string placed_by;
    };
    std::map<std::string, std::vector<Claim>> claims; // problem stem -> the files placed there
    std::map<std::string, const KnownProblem*> problem_of;
    for (const auto& file : files) {
        const std::string ext = file.extension().string();
        if (!is_solution_extension(ext))
            continue;
        const std::string stem = file.stem().string();
        const auto number = leading_number(stem);
        if (!number)
            continue; // __init__.py, helpers: not a solution
        const std::string name = file.filename().string();
        const auto hand = by_hand.find(name);
        if (ext != extension) {
            result.unplaced.push_back(
                {name, "a " + ext + " file; this sweep's backend runs " + extension +
                           (ext == ".py" ? " (PKB's Python solutions need --pkb-checkout DIR)" : "")});
            continue;
        }
        const auto problem_name = problem_name_of(stem, backend);
        if (!problem_name && hand == by_hand.end()) {
            if (backend.empty())
                result.unplaced.push_back({name, "no backend suffix (<n>_<name>_<backend>" + ext + ")"});
            continue; // another backend's file (single runs)
        }
        NamePlacement placement;
        if (hand != by_hand.end()) {
            placement.problem = names.find(hand->second);
            if (!placement.problem)
                throw Error("--place " + name + "=" + hand->second + ": no such problem");
            placement.placed_by = "by hand";
        } else {
            placement = names.place(*number, *problem_name);
        }
        if (!placement.problem) {
            result.unplaced.push_back({name, placement.reason});
            continue;
        }
        claims[placement.problem->stem].push_back({file, *number, placement.placed_by});
        problem_of[placement.problem->stem] = placement.problem;
    }
    // One file per problem: of several claims, the one whose number is the problem's, if just one.
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
            result.unplaced.push_back(
                {c.file.filename().string(),
                 "problem " + stem + " is claimed by " + std::to_string(list.size()) +
                     " files of this folder" +
                     (chosen ? "; " + chosen->file.filename().string() + " is used" : "")});
        }
        if (chosen)
            result.placed[stem] = {chosen->file, chosen->placed_by, chosen->number != problem->id};
    }
    return result;
}

std::map<std::string, std::string> parse_place_flags(const std::vector<std::string>& entries) {
    std::map<std::string, std::string> by_hand;
    for (const auto& entry : entries) {
        const auto eq = entry.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size())
            throw Error("--place " + entry + ": expected FILE=PROBLEM");
        by_hand[fs::path(entry.substr(0, eq)).filename().string()] = entry.substr(eq + 1);
    }
    return by_hand;
}

namespace {

std::set<std::string> word_set(const std::string& name) {
    std::set<std::string> words;
    std::stringstream in(name);
    std::string token;
    while (std::getline(in, token, '_')) {
        std::transform(token.begin(), token.end(), token.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        if (!token.empty())
            words.insert(token);
    }
    return words;
}

// What the rules make of one file of the folder, for the list shown on a miss.
std::string describe_file(const fs::path& file, const ProblemNames& names, const std::string& problem_stem,
                          const std::string& backend, const std::string& extension) {
    const std::string stem = file.stem().string();
    const auto number = leading_number(stem);
    if (!number)
        return "no leading number";
    std::string what;
    auto placement = names.place(*number, problem_name_of(stem, "").value_or(name_without_number(stem)));
    if (placement.problem)
        what = placement.problem->stem == problem_stem ? "this problem, by " + placement.placed_by
                                                       : "names " + placement.problem->stem;
    else
        what = "not placed: " + placement.reason;
    const std::string ext = file.extension().string();
    const std::string rest = name_without_number(stem);
    const auto cut = rest.rfind('_');
    if (ext != extension)
        what += "; a " + ext + " file, this backend runs " + extension;
    else if (placement.problem && placement.problem->stem == problem_stem &&
             !problem_name_of(stem, backend) && cut != std::string::npos)
        what += "; --solution " + rest.substr(cut + 1) + " runs it";
    return what;
}

struct NearFile {
    int shared = 0, distance = 0; // words shared with the problem's name; how far its number is
    std::string name;
    fs::path file;
};

// The folder's solution files, closest to the problem first: most words of its name shared, then the
// nearest number, then by name.
std::vector<NearFile> closest_files(const std::vector<fs::path>& files, const std::string& problem_stem,
                                    int problem_id) {
    const std::set<std::string> wanted = word_set(name_without_number(problem_stem));
    std::vector<NearFile> near;
    for (const auto& file : files) {
        const std::string stem = file.stem().string();
        NearFile n{0, 1000000, file.filename().string(), file};
        for (const auto& word : word_set(name_without_number(stem)))
            n.shared += static_cast<int>(wanted.count(word));
        if (auto number = leading_number(stem))
            n.distance = std::abs(*number - problem_id);
        near.push_back(std::move(n));
    }
    std::sort(near.begin(), near.end(), [](const NearFile& a, const NearFile& b) {
        return std::tie(b.shared, a.distance, a.name) < std::tie(a.shared, b.distance, b.name);
    });
    return near;
}

} // namespace

SolutionLookup find_solution_file(const fs::path& dir, const std::vector<KnownProblem>& known,
                                  const std::string& problem_stem, const std::string& backend,
                                  const std::string& extension, const std::vector<std::string>& place) {
    SolutionLookup lookup;
    const fs::path expected = dir / (problem_stem + "_" + backend + extension);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        lookup.error = "solutions directory not found: " + dir.string();
        return lookup;
    }
    std::vector<KnownProblem> problems = known;
    bool known_stem = false;
    for (const auto& k : problems)
        known_stem = known_stem || k.stem == problem_stem;
    if (!known_stem) // a PKB stem without a leading number: only --place can place a file there
        problems.push_back({leading_number(problem_stem).value_or(0), problem_stem});
    const ProblemNames names(problems);
    std::map<std::string, std::string> by_hand;
    std::vector<fs::path> files, others; // this backend's, and every solution file of the folder
    std::string expected_reason;         // why the expected file, if there, is not used
    try {
        by_hand = parse_place_flags(place);
        for (const auto& [file, problem] : by_hand) {
            if (!fs::is_regular_file(dir / file, ec))
                throw Error("--place " + file + "=" + problem + ": no such file in " + dir.string());
            if (!names.find(problem))
                throw Error("--place " + file + "=" + problem + ": no such problem");
        }
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            std::error_code type_ec;
            if (!it->is_regular_file(type_ec))
                continue;
            const std::string ext = it->path().extension().string();
            if (ext == extension)
                files.push_back(it->path());
            if (is_solution_extension(ext) || ext == ".cc")
                others.push_back(it->path());
        }
        std::sort(files.begin(), files.end());
        const FolderPlacement placement = place_files(files, names, extension, by_hand, backend);
        if (auto found = placement.placed.find(problem_stem); found != placement.placed.end()) {
            lookup.file = found->second.file;
            lookup.placed_by = found->second.placed_by;
            lookup.renumbered = found->second.renumbered;
            if (lookup.file.filename() != expected.filename())
                lookup.note = "placed " + lookup.file.filename().string() + " at " + problem_stem + " (" +
                              (lookup.placed_by == "by hand" ? std::string("by hand, --place")
                                                             : "by its " + lookup.placed_by) +
                              (lookup.renumbered ? "; the folder numbers this problem differently" : "") +
                              "): " + lookup.file.string();
            return lookup;
        }
        for (const auto& [file, reason] : placement.unplaced)
            if (file == expected.filename().string())
                expected_reason = reason;
    } catch (const Error& error) {
        lookup.error = error.what();
        return lookup;
    }
    // A miss: the files closest to the problem first (its words, then its number).
    const KnownProblem* problem = names.by_stem(problem_stem);
    const std::vector<NearFile> near =
        closest_files(others, problem_stem, problem ? problem->id : leading_number(problem_stem).value_or(0));
    lookup.error = (fs::is_regular_file(expected, ec)
                        ? "solution file not used: " + expected.string() + ": " + expected_reason
                        : "solution file not found: " + expected.string()) +
                   "; no file of " + dir.string() + " ending in _" + backend + extension + " is placed at " +
                   problem_stem + " by its name (docs/sweeps.md \"Placing solutions at problems\")";
    if (near.empty()) {
        lookup.error += " (no solution files there)";
        return lookup;
    }
    constexpr std::size_t kShown = 8;
    lookup.error += "; closest files there:";
    for (std::size_t i = 0; i < near.size() && i < kShown; ++i)
        lookup.error += "\n    " + near[i].name + "  (" +
                        describe_file(near[i].file, names, problem_stem, backend, extension) + ")";
    if (near.size() > kShown)
        lookup.error += "\n    ... (" + std::to_string(near.size() - kShown) + " more solution files)";
    lookup.error += "\n  to run one of them as " + problem_stem +
                    ": --place FILE=" + (problem ? std::to_string(problem->id) : problem_stem) +
                    " (with --solutions-dir), or --solution " + (dir / "FILE").string() + " --ignore-name";
    return lookup;
}

std::optional<std::string> file_names_other_problem(const std::string& file_name,
                                                    const std::vector<KnownProblem>& known,
                                                    const std::string& asked_stem) {
    const std::string stem = fs::path(file_name).stem().string();
    const auto number = leading_number(stem);
    if (!number)
        return std::nullopt;
    const ProblemNames names(known);
    // The name with the last word taken as the backend (1_allreduce_host), and whole (1_allreduce).
    std::vector<std::string> candidates;
    if (auto name = problem_name_of(stem, ""))
        candidates.push_back(*name);
    candidates.push_back(name_without_number(stem));
    std::optional<std::string> other;
    for (const auto& name : candidates) {
        const NamePlacement placement = names.place(*number, name);
        if (placement.problem && placement.problem->stem == asked_stem)
            return std::nullopt;
        if (placement.named &&
            (placement.named->stem == asked_stem || placement.numbered->stem == asked_stem))
            return std::nullopt; // ambiguous between the asked problem and another: the asker decides
        if (other)
            continue;
        if (placement.problem)
            other = placement.problem->stem + " (by its " +
                    (placement.placed_by == "name" ? std::string("name") : std::string("words")) + ")";
        else if (placement.named)
            other = placement.named->stem + " or " + placement.numbered->stem +
                    " (its name is one's, its number the other's)";
    }
    return other;
}

std::string solution_name_refusal(const fs::path& file, const std::vector<KnownProblem>& known,
                                  const std::string& asked_stem) {
    const auto other = file_names_other_problem(file.filename().string(), known, asked_stem);
    if (!other)
        return {};
    return "refused: " + file.string() + " is named for problem " + *other + ", not " + asked_stem +
           ", the problem asked for: judge it with --problem " + other->substr(0, other->find(' ')) +
           ", or add --ignore-name to judge it as " + asked_stem + " anyway";
}

} // namespace pkbw::cli
