// Where a PKB run's parts come from (pkb_locate.h).
#include "pkb_locate.h"

#include "pkbw/core/error.h"
#include "pkbw/core/generation.h"
#include "solution_names.h"
#include "subprocess.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <unistd.h>

namespace pkbw::cli::detail {

// PKB's resolve_problem (utils/problem_id.py): digits resolve to the first reference/<n>_*.py in
// sorted order, anything else is a stem (".py" stripped). The id is the stem's leading digits.
std::optional<PkbProblem> resolve_pkb_problem(const fs::path& checkout, std::string arg, std::string& error) {
    const fs::path folder = checkout / "reference";
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) {
        error = "not a PKB checkout: " + folder.string() + " is missing";
        return std::nullopt;
    }
    if (arg.ends_with(".py"))
        arg.resize(arg.size() - 3);
    std::string stem;
    if (!arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        std::vector<std::string> matches;
        for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
            const std::string name = it->path().filename().string();
            if (name.starts_with(arg + "_") && name.ends_with(".py"))
                matches.push_back(name.substr(0, name.size() - 3));
        }
        std::sort(matches.begin(), matches.end());
        if (matches.empty()) {
            error = "no PKB problem " + arg + ": nothing matches " + (folder / (arg + "_*.py")).string();
            return std::nullopt;
        }
        stem = matches.front();
    } else {
        stem = arg;
    }
    PkbProblem problem;
    problem.stem = stem;
    problem.reference = folder / (stem + ".py");
    if (!fs::is_regular_file(problem.reference, ec)) {
        error = "no PKB problem '" + arg + "': " + problem.reference.string() + " is missing";
        return std::nullopt;
    }
    std::size_t digits = 0;
    while (digits < stem.size() && stem[digits] >= '0' && stem[digits] <= '9')
        ++digits;
    problem.id = digits > 0 ? std::atoi(stem.substr(0, digits).c_str()) : 1; // PKB's default id
    return problem;
}

std::string torch_dtype_name(DType dtype) {
    switch (dtype) {
    case DType::BF16:
        return "bfloat16";
    case DType::F16:
        return "float16";
    case DType::F32:
        return "float32";
    case DType::F64:
        return "float64";
    default:
        return {};
    }
}

namespace {

// The launcher execs a path, so the interpreter is resolved here: a name with a '/' as given, else
// the first executable of that name on PATH.
fs::path find_program(const std::string& name) {
    if (name.find('/') != std::string::npos)
        return name;
    const char* path = std::getenv("PATH");
    std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    while (!dirs.empty()) {
        const std::size_t colon = dirs.find(':');
        const fs::path candidate = fs::path(std::string(dirs.substr(0, colon))) / name;
        std::error_code ec;
        if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        if (colon == std::string_view::npos)
            break;
        dirs.remove_prefix(colon + 1);
    }
    return {};
}

// A cold `import torch` can take many seconds on a slow file system; one that takes longer than this
// is passed over (and listed).
constexpr double kTorchProbeSeconds = 20.0;

// "" when `python` imports torch, else why not.
std::string torch_refusal(const fs::path& python) {
    const ProcessResult probe = run_process({python.string(), "-c", "import torch"}, current_environment(),
                                            kTorchProbeSeconds, 64u << 10);
    if (probe.ok())
        return {};
    if (!probe.started)
        return "cannot be started";
    if (probe.timed_out)
        return "'import torch' took over " + std::to_string(static_cast<int>(kTorchProbeSeconds)) + " s";
    if (probe.interrupted)
        return "interrupted";
    return "cannot import torch";
}

} // namespace

PythonChoice choose_python(const std::string& option, const fs::path& checkout) {
    PythonChoice choice;
    const char* variable = std::getenv("PKBW_PYTHON");
    if (!option.empty() || (variable && *variable)) {
        const std::string name = !option.empty() ? option : variable;
        choice.by = choice.how = !option.empty() ? "--python" : "$PKBW_PYTHON";
        choice.path = find_program(name);
        if (choice.path.empty())
            choice.error = "no Python interpreter '" + name + "' on PATH (" + choice.how + ")";
        return choice;
    }
    std::vector<fs::path> candidates;
    std::error_code ec;
    const fs::path venv = checkout / ".venv" / "bin" / "python";
    if (fs::exists(venv, ec))
        candidates.push_back(venv);
    const char* path = std::getenv("PATH");
    std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    while (!dirs.empty()) {
        const std::size_t colon = dirs.find(':');
        const std::string dir(dirs.substr(0, colon));
        for (const char* name : {"python3", "python"}) {
            const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
            if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
                candidates.push_back(candidate);
        }
        if (colon == std::string_view::npos)
            break;
        dirs.remove_prefix(colon + 1);
    }
    std::set<fs::path> seen; // one probe per interpreter, however many names or links reach it
    for (const fs::path& candidate : candidates) {
        const fs::path real = fs::weakly_canonical(candidate, ec);
        if (!seen.insert(ec ? candidate : real).second)
            continue;
        if (std::string why = torch_refusal(candidate); !why.empty()) {
            choice.tried.push_back(candidate.string() + " (" + why + ")");
            continue;
        }
        choice.path = candidate;
        choice.by = candidate == venv ? ".venv" : "PATH";
        choice.how = candidate == venv ? "the checkout's .venv, which imports torch"
                                       : "the first python3/python on PATH that imports torch";
        if (!choice.tried.empty()) {
            choice.how += "; passed over: ";
            for (std::size_t i = 0; i < choice.tried.size(); ++i)
                choice.how += (i ? ", " : "") + choice.tried[i];
        }
        return choice;
    }
    choice.error = "no Python with torch found: ";
    if (choice.tried.empty())
        choice.error += "no python3 or python on PATH";
    else
        for (std::size_t i = 0; i < choice.tried.size(); ++i)
            choice.error += (i ? ", " : "tried ") + choice.tried[i];
    choice.error += " (give one with --python or $PKBW_PYTHON)";
    return choice;
}

// The rank program: engine/python/ in a source tree, python/ under share/pkbw when installed.
fs::path rank_script(const DataLayout& layout) {
    for (const fs::path& candidate : {layout.root / "engine" / "python" / "pkbw_pkb_rank.py",
                                      layout.root / "python" / "pkbw_pkb_rank.py"}) {
        std::error_code ec;
        if (fs::is_regular_file(candidate, ec))
            return candidate;
    }
    return {};
}

// What the ranks' environment will say about NVLink multicast: the launcher adds NCCL_NVLS_ENABLE=0
// and this run adds TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1, unless pkbw's own
// environment sets them; with --allow-multicast (`allow`) only what that environment sets.
std::optional<std::string> pkb_world_refusal(const Problem* problem, int world) {
    const auto why = problem ? problem->check_world(world) : std::nullopt;
    if (!why)
        return std::nullopt;
    return "refused: " + *why + "; PKB's reference cannot run at W = " + std::to_string(world) +
           " either (--nproc)";
}

std::map<std::string, std::string> multicast_environment(bool allow) {
    std::map<std::string, std::string> environment = {
        {"NCCL_NVLS_ENABLE", "0"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}, {"NVSHMEM_DISABLE_NVLS", "1"}};
    for (auto it = environment.begin(); it != environment.end();) {
        if (const char* set = std::getenv(it->first.c_str()))
            (it++)->second = set;
        else if (allow)
            it = environment.erase(it);
        else
            ++it;
    }
    return environment;
}

PkbSolution find_pkb_solution(const RunOptions& options, const fs::path& checkout,
                              const PkbProblem& problem) {
    PkbSolution found;
    std::error_code ec;
    std::vector<KnownProblem> known;
    try {
        known = pkb_checkout_problems(checkout);
    } catch (const Error& failure) {
        found.error = failure.what();
        return found;
    }
    if (options.solution.ends_with(".py") || options.solution.find('/') != std::string::npos) {
        found.path = options.solution;
        if (!fs::is_regular_file(found.path, ec))
            found.error = "solution file not found: " + found.path;
        else if (!options.place.empty())
            found.error = "--place places the files of --solutions-dir; a file given as --solution is run as "
                          "--problem says (with --ignore-name where its name says otherwise)";
        else if (!options.ignore_name)
            found.error = solution_name_refusal(found.path, known, problem.stem);
        return found;
    }
    if (!options.solutions_dir) {
        found.error = "give --solutions-dir or a .py --solution";
        return found;
    }
    const fs::path dir = *options.solutions_dir;
    const auto label = parse_generation_label(fs::absolute(dir).filename().string());
    found.backend = !options.solution.empty() && options.solution != "reference" ? options.solution
                    : !label.backend.empty()                                     ? label.backend
                                                                                 : "cuda";
    const SolutionLookup lookup =
        find_solution_file(dir, known, problem.stem, found.backend, ".py", options.place);
    found.path = lookup.file.empty() ? (dir / (problem.stem + "_" + found.backend + ".py")).string()
                                     : lookup.file.string();
    found.error = lookup.error;
    found.note = lookup.note;
    return found;
}

} // namespace pkbw::cli::detail
