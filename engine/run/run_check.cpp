// `pkbw check` (docs/cli.md): what pkbw can say of a candidate without running it, on any machine with
// the compiler (nvcc builds a CUDA candidate where there is no GPU): the problem and the file a run
// would judge, the source refusals (NVLink multicast, the NCCL device API, a name that names another
// problem, a world size), the compile with its diagnostics, and the flags of the candidate's own object
// by severity (docs/engine.md "Flags"); for a PKB Python solution (--pkb-checkout) its source's flags.
// Nothing is recorded: no store, no run folder; the compile cache is the one thing it writes. A clean
// check says nothing of correctness or speed: those need a run.
#include "compile_cache.h"
#include "locate.h"
#include "pkb_locate.h"
#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/status.h"
#include "pkbw/problems/registry.h"
#include "python_flags.h"
#include "run_session.h"
#include "suggest.h"
#include "version.h"

#include <fstream>
#include <ostream>

namespace pkbw::cli::detail {
namespace {

// Severities in the order a reader wants them: what could invalidate a result first.
int severity_rank(const std::string& severity) {
    return severity == "invalidating" ? 0 : severity == "suspect" ? 1 : severity == "info" ? 2 : 3;
}

} // namespace

int Run::check_finished(const std::string& status, int exit_code, const std::string& message,
                        const std::string& solution_path, const nlohmann::json& diagnostics) {
    if (!options_.json) {
        if (!message.empty())
            (exit_code == 0 ? out_ : err_) << "pkbw: " << message << "\n";
    } else {
        emit({{"event", protocol::kCheckFinished},
              {"problem", stem_},
              {"solution", solution_path},
              {"backend", backend_},
              {"status", status},
              {"exit_code", exit_code},
              {"message", message},
              {"diagnostics", diagnostics},
              {"flags", flags_json()}});
    }
    return exit_code;
}

// The flags of one's own code, most severe first; printed as a run's header is.
void Run::print_check(const std::string& solution_path, const std::string& build) {
    std::stable_sort(candidate_flags_.begin(), candidate_flags_.end(), [](const Flag& a, const Flag& b) {
        return severity_rank(a.severity) < severity_rank(b.severity);
    });
    if (options_.json)
        return;
    out_ << "pkbw check\n  Problem:  " << stem_ << "\n  Solution: " << solution_path
         << "\n  Backend:  " << backend_
         << (backend_ == "cuda" && !options_.pkb_checkout ? "  arch: " + options_.arch : std::string())
         << "\n  Compile:  " << build
         << "\n  Flags:    " << (candidate_flags_.empty() ? "none" : std::to_string(candidate_flags_.size()))
         << "\n";
    for (const Flag& flag : candidate_flags_)
        out_ << "    " << flag.severity << ": " << flag.text
             << (flag.reason.empty() ? "" : "  (" + flag.reason + ")") << "\n";
}

// A PKB Python solution: placed as a run places it, refused as a run refuses it (a world size its
// problem cannot run at, NVLink multicast where the ranks have it off), its source's flags; its torch
// extensions are built only when it runs.
int Run::check_pkb() {
    const auto none = nlohmann::json::array();
    std::string error;
    const fs::path checkout = fs::absolute(*options_.pkb_checkout);
    const auto problem = resolve_pkb_problem(checkout, options_.problem, error);
    if (!problem)
        return check_finished("error", kExitUsage, error, "", none);
    stem_ = problem->stem;
    if (const Problem* native = find_problem(stem_); native && native->info().stem == stem_)
        problem_ = native;
    backend_ = options_.backend.empty() ? "cuda" : options_.backend;
    const PkbSolution found = find_pkb_solution(options_, checkout, *problem);
    if (!found.error.empty())
        return check_finished("error", kExitUsage, found.error, found.path, none);
    if (!found.note.empty())
        err_ << "pkbw: " << found.note << "\n";
    if (const auto refusal = pkb_world_refusal(problem_, options_.nproc))
        return check_finished("refused", kExitUsage, *refusal, found.path, none);
    std::ifstream in(found.path);
    const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // The source's flags first: a refused solution's are still worth reading (--json carries them).
    ProblemConfig config = options_config();
    config.input_mode = InputMode::Pkb;
    candidate_flags_ =
        python_candidate_flags(source, problem_ ? own_collective_symbol(*problem_, config) : "");
    print_check(found.path, "not here: its torch extensions build when it runs");
    const std::string refusal =
        source_refusal(found.path, source, multicast_environment(options_.allow_multicast));
    if (!refusal.empty())
        return check_finished("refused", kExitFailed, refusal, found.path, none);
    return check_finished("checked", 0,
                          options_.json ? "checked; not run: correctness and speed need eval or perf" : "",
                          found.path, none);
}

int Run::check() {
    if (options_.pkb_checkout)
        return check_pkb();
    if (options_.solution.empty() || options_.solution == "reference")
        return check_finished("error", kExitUsage,
                              "--solution is required: a file, or a backend name with --solutions-dir", "",
                              nlohmann::json::array());
    const Problem* problem = find_problem(options_.problem);
    if (!problem)
        return check_finished("error", kExitUsage, unknown_problem_message(options_.problem), "",
                              nlohmann::json::array());
    stem_ = problem->info().stem;
    problem_ = problem;
    choose_backend();
    const auto [solution_path, usage_error] = locate_solution();
    if (!usage_error.empty())
        return check_finished("error", kExitUsage, usage_error, solution_path, nlohmann::json::array());
    try {
        layout_ = locate_data();
    } catch (const Error& error) {
        return check_finished("error", kExitEnvironment, error.what(), solution_path,
                              nlohmann::json::array());
    }
    std::ifstream in(solution_path);
    const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string refusal = backend_ == "cuda" ? nccl_device_api_refusal(source) : std::string();
    if (refusal.empty())
        refusal = source_refusal(solution_path, source, {});
    if (!refusal.empty())
        return check_finished("refused", kExitFailed, refusal, solution_path, nlohmann::json::array());

    cache_.emplace(options_.cache_dir);
    const CompileResult result = cache_->compile(compile_request(solution_path));
    nlohmann::json diagnostics = nlohmann::json::array();
    for (const auto& d : result.diagnostics)
        diagnostics.push_back({{"file", d.file},
                               {"line", d.line},
                               {"column", d.column},
                               {"severity", d.severity},
                               {"message", d.message}});
    if (!result.ok) {
        if (!options_.json)
            err_ << result.log;
        return check_finished(std::string(to_string(RunStatus::CompileError)), kExitFailed,
                              "compile candidate: FAILED: " + result.message, solution_path, diagnostics);
    }
    read_candidate_flags(solution_path, result);
    print_check(solution_path, result.cached ? "ok (cached)" : "ok");
    return check_finished("compiled", 0,
                          options_.json ? "compiled; not run: correctness and speed need eval or perf" : "",
                          solution_path, diagnostics);
}

} // namespace pkbw::cli::detail
