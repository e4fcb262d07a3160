// Run::execute and its steps (run_session.h): check the options, find the problem and the solution,
// record the run, compile both sides, launch the ranks, conclude.
#include "compile_cache.h"
#include "elf_symbols.h"
#include "locate.h"
#include "pkbw/core/dtype.h"
#include "pkbw/core/error.h"
#include "pkbw/core/generation.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/status.h"
#include "pkbw/problems/registry.h"
#include "pkbw/tracer_control.h"
#include "python_flags.h"
#include "run.h"
#include "run_session.h"
#include "safety.h"
#include "signals.h"
#include "solution_names.h"
#include "suggest.h"
#include "version.h"

#include <algorithm>
#include <fstream>
#include <ostream>

namespace fs = std::filesystem;
using nlohmann::json;

namespace pkbw::cli::detail {
namespace {

bool looks_like_path(const std::string& text) {
    return text.find('/') != std::string::npos || text.ends_with(".cu") || text.ends_with(".cpp") ||
           text.ends_with(".cc");
}

} // namespace

int Run::execute() {
    if (options_.mode == status::kModeCalibrate)
        return calibrate();
    if (options_.mode == status::kModeCheck)
        return check();
    if (auto code = check_options())
        return *code;
    if (options_.pkb_checkout)
        return execute_pkb();
    if (options_.solution.empty())
        return fail(to_string(RunStatus::Error), kExitUsage,
                    "--solution is required: a backend name (with --solutions-dir) or a file");
    const Problem* problem = find_problem(options_.problem);
    if (!problem)
        return fail(to_string(RunStatus::Error), kExitUsage, unknown_problem_message(options_.problem));
    stem_ = problem->info().stem;
    problem_ = problem;
    atol_ = options_.atol.value_or(problem->info().atol);
    rtol_ = options_.rtol.value_or(problem->info().rtol);
    choose_backend();

    // From here on the run is recorded, whatever happens.
    aa_ = options_.solution == "reference" && options_.mode == status::kModePerf;
    const bool is_reference = options_.solution == "reference" && !aa_;
    auto [solution_path, usage_error] = locate_solution();
    dtype_from_solution_folder(solution_path);
    try {
        layout_ = locate_data();
    } catch (const Error& error) {
        begin(problem, solution_path, is_reference);
        return fail(to_string(RunStatus::Error), kExitEnvironment, error.what());
    }
    fs::path reference_source = layout_->problem_dir(problem_folder(*problem)) /
                                (backend_ == "cuda" ? "reference.cu" : "reference_host.cpp");
    if (is_reference || aa_)
        solution_path = reference_source.string();
    begin(problem, solution_path, is_reference);
    if (!usage_error.empty())
        return fail(to_string(RunStatus::Error), kExitUsage, usage_error);
    if (auto code = check_problem_config(*problem, reference_source))
        return *code;
    if (!options_.json)
        print_run_header(*problem, solution_path);
    if (!is_reference)
        if (auto code = refuse_source(solution_path))
            return *code;

    cache_.emplace(options_.cache_dir);
    fs::path reference_lib, candidate_lib;
    if (compares() || is_reference) {
        CompileResult result = compile("reference", reference_source);
        if (result.interrupted || interrupt_signal())
            return fail(to_string(RunStatus::Interrupted), kExitInterrupted, "interrupted while compiling");
        if (!result.ok)
            return finish(std::string(to_string(RunStatus::CompileError)), kExitFailed,
                          "reference: " + result.message);
        reference_lib = result.library;
    }
    if (!is_reference) {
        CompileResult result = compile("candidate", solution_path);
        if (result.interrupted || interrupt_signal())
            return fail(to_string(RunStatus::Interrupted), kExitInterrupted, "interrupted while compiling");
        if (!result.ok)
            return finish(std::string(to_string(RunStatus::CompileError)), kExitFailed, result.message);
        candidate_lib = result.library;
        read_candidate_flags(solution_path, result);
    }
    return launch(reference_lib, candidate_lib, is_reference);
}

std::optional<int> Run::check_options() {
    if (options_.mode != status::kModeEval && options_.mode != status::kModeDryrun &&
        options_.mode != status::kModePerf)
        return fail(to_string(RunStatus::Error), kExitUsage, "unknown mode '" + options_.mode + "'");
    if (options_.nproc < 1)
        return fail(to_string(RunStatus::Error), kExitUsage, "--nproc must be at least 1");
    if (options_.trials < 1)
        return fail(to_string(RunStatus::Error), kExitUsage, "--trials must be at least 1");
    if (!options_.dtype.empty()) {
        auto dtype = parse_dtype(options_.dtype);
        if (!dtype)
            return fail(to_string(RunStatus::Error), kExitUsage, "unknown dtype '" + options_.dtype + "'");
        dtype_ = *dtype;
        dtype_origin_ = "--dtype";
    }
    if (options_.inputs != "pkb" && options_.inputs != "exact")
        return fail(to_string(RunStatus::Error), kExitUsage,
                    "--inputs must be pkb or exact, not '" + options_.inputs + "'");
    return std::nullopt;
}

// The backend: asked for, else implied by a solution file's extension, else cuda when a GPU is here.
void Run::choose_backend() {
    backend_ = options_.backend;
    if (backend_.empty() && looks_like_path(options_.solution))
        backend_ = options_.solution.ends_with(".cu") ? "cuda" : "host";
    if (backend_.empty())
        backend_ = gpu_present() ? "cuda" : "host";
}

std::pair<std::string, std::string> Run::locate_solution() {
    std::string solution_path;
    std::string usage_error;
    fs::path dir = options_.solutions_dir.value_or(fs::path("solutions_" + options_.solution));
    std::error_code ec;
    if (backend_ != "cuda" && backend_ != "host") {
        usage_error = "--backend must be cuda or host, not '" + backend_ + "'";
    } else if (options_.solution == "reference") {
        if (!aa_ && compares())
            usage_error =
                "eval compares a candidate with the reference: --solution reference is only for dryrun "
                "and perf (the reference timed against itself)";
    } else if (looks_like_path(options_.solution) || fs::is_regular_file(options_.solution, ec)) {
        // A file: its name must not name another problem (solution_names.h), unless --ignore-name.
        solution_path = options_.solution;
        if (!fs::is_regular_file(solution_path, ec))
            usage_error = "solution file not found: " + solution_path;
        else if (!options_.place.empty())
            usage_error = "--place places the files of --solutions-dir; a file given as --solution is run as "
                          "--problem says (with --ignore-name where its name says otherwise)";
        else if (!options_.ignore_name)
            usage_error = solution_name_refusal(solution_path, native_problems(), stem_);
    } else if (!fs::is_directory(dir, ec)) {
        usage_error = "solutions directory not found: " + dir.string();
    } else {
        // The file the sweep's name rules place at this problem among the folder's _<name> files.
        const std::string extension = backend_ == "cuda" ? ".cu" : ".cpp";
        const SolutionLookup lookup =
            find_solution_file(dir, native_problems(), stem_, options_.solution, extension, options_.place);
        solution_path = lookup.file.empty() ? (dir / (stem_ + "_" + options_.solution + extension)).string()
                                            : lookup.file.string();
        usage_error = lookup.error;
        if (!lookup.note.empty())
            err_ << "pkbw: " << lookup.note << "\n";
    }
    return {solution_path, usage_error};
}

ProblemConfig Run::options_config() const {
    return ProblemConfig{options_.nproc,
                         options_.m,
                         options_.n,
                         dtype_,
                         0,
                         options_.seed,
                         options_.inputs == "exact" ? InputMode::Exact : InputMode::Pkb};
}

std::optional<int> Run::check_problem_config(const Problem& problem, const fs::path& reference_source) {
    std::error_code ec;
    ProblemConfig config = options_config();
    if (auto why = problem.check_config(config))
        return fail(to_string(RunStatus::Error), kExitUsage,
                    why->starts_with(stem_ + ":") ? *why : stem_ + ": " + *why);
    for (int rank = 0; rank < options_.nproc; ++rank) {
        std::uint64_t bytes = 0;
        for (const TensorSpec& spec : problem.input_specs(config, rank))
            bytes += spec_bytes(spec);
        input_bytes_ = std::max(input_bytes_, bytes);
    }
    if (backend_ == "cuda" && !gpu_present())
        return fail(to_string(RunStatus::Error), kExitEnvironment,
                    "the cuda backend needs a GPU and /dev/nvidia0 is absent (--backend host)");
    if (!fs::is_regular_file(reference_source, ec))
        return fail(to_string(RunStatus::Error), kExitEnvironment,
                    "the problem's reference is missing: " + reference_source.string());
    return std::nullopt;
}

void Run::dtype_from_solution_folder(const std::string& solution_path) {
    // Generated solutions target one precision, named in their folder (PKB's generation naming).
    if (!options_.dtype.empty() || solution_path.empty())
        return;
    const auto label = parse_generation_label(fs::absolute(solution_path).parent_path().filename().string());
    if (auto dtype = parse_dtype(label.precision); label.parsed && dtype) {
        dtype_ = *dtype;
        dtype_origin_ = "folder";
    }
}

std::string Run::dtype_origin_text() const {
    if (dtype_origin_ == "--dtype")
        return "--dtype";
    if (dtype_origin_ == "folder")
        return "the folder's name";
    return "PKB's default; --dtype f32 for a float32 candidate";
}

void Run::print_run_header(const Problem& problem, const std::string& solution_path) {
    out_ << "pkbw " << options_.mode << "\n  Problem:  " << stem_ << " (" << problem.info().category << ") "
         << problem.info().title << "\n  Solution: " << options_.solution << "  (" << solution_path << ")\n"
         << "  Backend:  " << backend_ << "  nproc: " << options_.nproc << "\n  Shape:    (" << options_.m
         << ", " << options_.n << ")  dtype=" << dtype_name(dtype_) << " (" << dtype_origin_text()
         << ")  inputs=" << options_.inputs << "\n";
    if (compares())
        out_ << "  Trials:   " << options_.trials << "  atol=" << atol_ << " rtol=" << rtol_ << "\n";
}

std::optional<int> Run::refuse_source(const std::string& solution_path) {
    std::ifstream in(solution_path);
    std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (const std::string refusal = nccl_device_api_refusal(source); !refusal.empty() && backend_ == "cuda")
        return fail(to_string(RunStatus::Error), kExitEnvironment, refusal);
    if (std::string refusal = source_refusal(solution_path, source, {}); !refusal.empty())
        return fail(to_string(RunStatus::Error), kExitFailed, refusal);
    return std::nullopt;
}

// The flags come from the candidate's own object, not the linked library, whose imports include what
// the static CUDA runtime and cuBLAS bring (docs/engine.md "Flags").
void Run::read_candidate_flags(const std::string& solution_path, const CompileResult& result) {
    // Fails closed: flags that could not be read are a flag of their own, never "none" (a candidate's
    // own assembler directives can make an object the reader refuses).
    auto unknown = [this](const std::string& why) {
        candidate_flags_ = {
            {"suspect", "its own code's flags are unknown: " + why,
             "pkbw could not read the candidate's object, so nothing it imports was checked"}};
        candidate_warnings_.push_back(candidate_flags_.front().text);
        err_ << "pkbw: no flags from the candidate's code: " << why << "\n";
    };
    try {
        std::string object_error;
        const fs::path object = cache_->object(compile_request(solution_path), result, object_error);
        if (object.empty())
            return unknown(object_error);
        const std::string own =
            problem_
                ? own_collective_symbol(*problem_, ProblemConfig{options_.nproc, options_.m, options_.n,
                                                                 dtype_, 0, options_.seed, InputMode::Pkb})
                : std::string();
        candidate_flags_ = object_flags(object, own);
        for (const auto& flag : candidate_flags_)
            if (flag.severity != "info")
                candidate_warnings_.push_back(flag.text);
    } catch (const Error& error) {
        unknown(error.what());
    }
}

// Writes the ranks' config, launches them (and a perf run's further launches) and concludes.
int Run::launch(const fs::path& reference_lib, const fs::path& candidate_lib, bool is_reference) {
    fs::path config_path = run_layout::config(run_dir_);
    std::ofstream(config_path) << rank_config(reference_lib, candidate_lib).dump(2) << "\n";
    recorder_.add_artifact(run_id_, {std::nullopt, std::nullopt, "config", config_path.string()});
    recorder_.archive(run_id_, {"config", config_path.string(), "", "", std::nullopt, std::nullopt});
    const LaunchSpec spec = launch_spec(config_path);
    Observer observer(options_.json, out_, results_, hellos_, perf_, &trust_events_, start_progress());
    perf_.set_launch(0);
    LaunchOutcome outcome = launch_ranks(spec, observer);
    if (options_.perf || options_.mode == status::kModePerf)
        outcome = launch_more(spec, reference_lib, candidate_lib, observer, std::move(outcome));
    return conclude(outcome, is_reference);
}

LaunchSpec Run::launch_spec(const fs::path& config_path) {
    std::error_code ec;
    LaunchSpec spec;
    spec.program = options_.rank_program.empty() ? executable_dir() / "pkbw-rank" : options_.rank_program;
    spec.args = {"--config", config_path.string()};
    spec.world_size = options_.nproc;
    spec.run_dir = run_dir_;
    spec.cuda = backend_ == "cuda";
    spec.timeouts = options_.timeouts;
    spec.timeouts.fit_inputs(input_bytes_);
    if (backend_ == "host")
        spec.address_space_limit =
            options_.memory_limit_gib ? static_cast<std::uint64_t>(std::max(*options_.memory_limit_gib, 0.0) *
                                                                   static_cast<double>(1ull << 30))
                                      : default_host_address_space_limit(options_.nproc);
    const fs::path tracer = executable_dir().parent_path() / "lib" / "libpkbw_tracer.so";
    if (options_.trace_iterations > 0 && backend_ == "cuda") {
        if (fs::exists(tracer, ec)) {
            for (const auto& [name, value] :
                 tracer::tracing_environment(tracer.string(), (run_dir_ / "trace").string()))
                spec.extra_env[name] = value;
        } else if (!options_.json) {
            err_ << "pkbw: " << tracer.string() << " not found: tracing records engine ranges only\n";
        }
    }
    return spec;
}

} // namespace pkbw::cli::detail
