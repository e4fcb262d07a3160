// `pkbw eval|perf|dryrun --pkb-checkout DIR`: PKB's own Python solutions, run by pkbw. The problem,
// its reference and its inputs come from the checkout (PKB's 87 problems, not pkbw's registry); the
// ranks are engine/python/pkbw_pkb_rank.py under pkbw's launcher, so the watchdog, the store, the
// perf statistics and the run layout are the same as for native runs. docs/pkb-interop.md.
#include "pkb_locate.h"
#include "pkbw/core/compare.h"
#include "pkbw/core/dtype.h"
#include "pkbw/core/error.h"
#include "pkbw/core/generation.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/safetensors.h"
#include "pkbw/core/status.h"
#include "pkbw/core/store.h"
#include "pkbw/problems/registry.h"
#include "python_flags.h"
#include "run_session.h"
#include "safety.h"
#include "solution_names.h"
#include "subprocess.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <unistd.h>

namespace pkbw::cli::detail {

// What a PKB run resolved before its ranks start, step by step (execute_pkb).
struct PkbPlan {
    fs::path checkout;
    PkbProblem problem;
    bool is_reference = false;
    std::string solution_path, pkb_backend = "cuda", torch_dtype;
    fs::path script;
    PythonChoice python;
    std::map<std::string, std::string> environment; // the ranks' (multicast on or off)
};

int Run::execute_pkb() {
    PkbPlan plan;
    if (const auto ended = resolve_pkb(plan))
        return *ended;
    if (const auto ended = prepare_pkb(plan))
        return *ended;
    print_pkb_header(plan);
    const fs::path config_path = write_pkb_config(plan);
    const LaunchSpec spec = pkb_launch_spec(plan, config_path);
    Observer observer(options_.json, out_, results_, hellos_, perf_, &trust_events_, start_progress());
    return conclude(launch_ranks(spec, observer), plan.is_reference);
}

std::optional<int> Run::resolve_pkb(PkbPlan& plan) {
    std::string error;
    plan.checkout = fs::absolute(*options_.pkb_checkout);
    const auto problem = resolve_pkb_problem(plan.checkout, options_.problem, error);
    if (!problem)
        return fail(to_string(RunStatus::Error), kExitUsage, error);
    plan.problem = *problem;
    stem_ = problem->stem;
    // pkbw's descriptor of the same problem, when it has one, gives the work model (bandwidth).
    if (const Problem* native = find_problem(stem_); native && native->info().stem == stem_)
        problem_ = native;
    atol_ = options_.atol.value_or(kPkbTolerance);
    rtol_ = options_.rtol.value_or(kPkbTolerance);
    backend_ = options_.backend.empty() ? (gpu_present() ? "cuda" : "host") : options_.backend;

    // The candidate: a .py file, or {stem}_{backend}.py in the solutions folder (PKB's solution_path).
    plan.is_reference = options_.solution == "reference" && !options_.solutions_dir;
    std::string usage_error;
    if (options_.solution.ends_with(".py") || options_.solution.find('/') != std::string::npos ||
        !plan.is_reference) {
        const PkbSolution found = find_pkb_solution(options_, plan.checkout, *problem);
        plan.solution_path = found.path;
        plan.pkb_backend = found.backend;
        usage_error = found.error;
        if (!found.note.empty())
            err_ << "pkbw: " << found.note << "\n";
    } else if (compares()) {
        usage_error =
            "eval compares a candidate with the reference: give --solutions-dir or a .py --solution";
    }
    dtype_from_solution_folder(plan.solution_path);
    if (plan.is_reference)
        plan.solution_path = problem->reference.string();
    begin(problem->id, stem_, plan.solution_path, plan.is_reference);
    if (!usage_error.empty())
        return fail(to_string(RunStatus::Error), kExitUsage, usage_error);
    // A world size no shape of the problem runs at (49 at W = 1) fails PKB's reference as it would the
    // solution: refused before the ranks start, so that the failure is not read as the solution's.
    if (const auto refusal = pkb_world_refusal(problem_, options_.nproc))
        return fail(to_string(RunStatus::Error), kExitUsage, *refusal);
    if (backend_ != "cuda" && backend_ != "host")
        return fail(to_string(RunStatus::Error), kExitUsage,
                    "--backend must be cuda or host, not '" + backend_ + "'");
    plan.torch_dtype = torch_dtype_name(dtype_);
    if (plan.torch_dtype.empty())
        return fail(to_string(RunStatus::Error), kExitUsage,
                    "PKB's worker takes float32, float16, bfloat16 or float64, not " +
                        std::string(dtype_name(dtype_)));
    return std::nullopt;
}

std::optional<int> Run::prepare_pkb(PkbPlan& plan) {
    if (backend_ == "cuda" && !gpu_present())
        return fail(to_string(RunStatus::Error), kExitEnvironment,
                    "the cuda backend needs a GPU and /dev/nvidia0 is absent (--backend host runs PKB "
                    "solutions written for the CPU only)");
    try {
        layout_ = locate_data();
    } catch (const Error& failure) {
        return fail(to_string(RunStatus::Error), kExitEnvironment, failure.what());
    }
    plan.script = rank_script(*layout_);
    if (plan.script.empty())
        return fail(to_string(RunStatus::Error), kExitEnvironment,
                    "pkbw_pkb_rank.py not found under " + layout_->root.string() +
                        " (engine/python or python)");
    plan.python = choose_python(options_.python, plan.checkout);
    if (plan.python.path.empty())
        return fail(to_string(RunStatus::Error), kExitEnvironment, plan.python.error);
    const PythonChoice& chosen = plan.python;
    // An event of its own, without a rank (the launcher's; readers skip events they do not know).
    emit({{"event", "python"},
          {"path", chosen.path.string()},
          {"chosen_by", chosen.by},
          {"passed_over", chosen.tried},
          {"text", "python: " + chosen.path.string() + " (" + chosen.how + ")"}});
    plan.environment = multicast_environment(options_.allow_multicast);
    if (plan.is_reference)
        return std::nullopt;
    std::ifstream in(plan.solution_path);
    const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (std::string refusal = source_refusal(plan.solution_path, source, plan.environment); !refusal.empty())
        return fail(to_string(RunStatus::Error), kExitFailed, refusal);
    // Flags from the solution's own code, as a native candidate's come from its own object.
    // PKB's solutions always draw PKB's inputs.
    ProblemConfig config = options_config();
    config.input_mode = InputMode::Pkb;
    const std::string own = problem_ ? own_collective_symbol(*problem_, config) : std::string();
    candidate_flags_ = python_candidate_flags(source, own);
    for (const auto& flag : candidate_flags_)
        if (flag.severity != "info")
            candidate_warnings_.push_back(flag.text);
    return std::nullopt;
}

void Run::print_pkb_header(const PkbPlan& plan) {
    if (options_.json)
        return;
    out_ << "pkbw " << options_.mode << " (PKB solution)\n  Problem:  " << stem_ << "  ("
         << plan.problem.reference.string() << ")\n  Solution: " << plan.solution_path
         << "\n  Backend:  " << backend_ << "  nproc: " << options_.nproc
         << "\n  Python:   " << plan.python.path.string() << "  (" << plan.python.how << ")\n  Shape:    ("
         << options_.m << ", " << options_.n << ")  dtype=" << plan.torch_dtype << " (" << dtype_origin_text()
         << ")\n";
    if (compares())
        out_ << "  Trials:   " << options_.trials << "  atol=" << atol_ << " rtol=" << rtol_ << "\n";
}

fs::path Run::write_pkb_config(const PkbPlan& plan) {
    // One torch extensions folder per solution file: PKB solutions of different models reuse extension
    // names ("allgather_ext"), and load_inline would rebuild (or race on) a shared one.
    const fs::path extensions_dir =
        options_.cache_dir / "torch_extensions" /
        (start_.solution_sha256.empty() ? "reference" : start_.solution_sha256.substr(0, 16));
    const fs::path reference = fs::absolute(plan.problem.reference);
    json config = rank_config({}, {});
    config["pkb"] = {
        {"checkout", plan.checkout.string()},
        {"reference_file", reference.string()},
        {"solution_file", plan.is_reference ? std::string() : fs::absolute(plan.solution_path).string()},
        {"solution_backend", plan.pkb_backend},
        {"problem_id", plan.problem.id},
        {"torch_dtype", plan.torch_dtype},
        {"device", backend_ == "cuda" ? "cuda" : "cpu"},
        {"extensions_dir", extensions_dir.string()}};
    // The candidate's process and the reference's timing worker start through it (docs/pkb-interop.md,
    // "The sandbox"); PKBW_SANDBOX=off or a wrapper of the user's own replaces it.
    if (const fs::path sandbox = executable_dir() / "pkbw-sandbox"; fs::exists(sandbox))
        config["pkb"]["sandbox_program"] = sandbox.string();
    const fs::path config_path = run_layout::config(run_dir_);
    std::ofstream(config_path) << config.dump(2) << "\n";
    recorder_.add_artifact(run_id_, {std::nullopt, std::nullopt, "config", config_path.string()});
    recorder_.archive(run_id_, {"config", config_path.string(), "", "", std::nullopt, std::nullopt});
    // PKB's Python reference is what ran beside the candidate (the candidate was archived by begin).
    if (!plan.is_reference)
        recorder_.archive(run_id_,
                          {"reference_source", reference.string(), "", "", std::nullopt, std::nullopt});
    return config_path;
}

LaunchSpec Run::pkb_launch_spec(const PkbPlan& plan, const fs::path& config_path) const {
    LaunchSpec spec;
    spec.program = plan.python.path;
    spec.args = {plan.script.string(), "--config", config_path.string()};
    spec.world_size = options_.nproc;
    spec.run_dir = run_dir_;
    spec.cuda = backend_ == "cuda";
    spec.timeouts = options_.timeouts;
    spec.rank0_inherits_listener = false; // torch's TCPStore binds MASTER_PORT itself
    // torch reserves far more address space than it uses, so the host cap applies only when asked for.
    if (backend_ == "host" && options_.memory_limit_gib)
        spec.address_space_limit = static_cast<std::uint64_t>(std::max(*options_.memory_limit_gib, 0.0) *
                                                              static_cast<double>(1ull << 30));
    for (const auto& [name, value] : plan.environment)
        spec.extra_env[name] = value;
    spec.extra_env["PYTHONUNBUFFERED"] = "1";
    return spec;
}

// The Python ranks decide each trial with PKB's rule in torch and leave both outputs as safetensors;
// here core's comparison adds the statistics native runs carry (and must agree with torch's verdict).
void Run::complete_pkb_results() {
    CompareOptions options;
    options.atol = atol_;
    options.rtol = rtol_;
    for (auto& [key, body] : results_) {
        const auto outputs = body.value("outputs", json::object());
        if (!outputs.contains("reference") || !outputs.contains("candidate"))
            continue;
        const std::string reference = outputs.value("reference", ""),
                          candidate = outputs.value("candidate", "");
        try {
            const SafetensorsFile ref = read_safetensors(reference);
            const SafetensorsFile cand = read_safetensors(candidate);
            const OutputComparison comparison = compare_outputs(ref.outputs, cand.outputs, options);
            json tensors = json::array();
            for (const auto& tensor : comparison.tensors)
                tensors.push_back(protocol::to_json(tensor));
            body["tensors"] = tensors;
            const bool torch_pass = body.value("status", "") == status::kPass;
            if (comparison.pass != torch_pass) {
                body["message"] =
                    body.value("message", "") + (body.value("message", "").empty() ? "" : "; ") +
                    "pkbw's comparison says " + (comparison.pass ? "pass" : comparison.first_error) +
                    " where torch.allclose says " + (torch_pass ? "pass" : "mismatch");
            }
        } catch (const Error& failure) {
            err_ << "pkbw: rank " << key.second << " trial " << key.first << ": " << failure.what() << "\n";
            continue;
        }
        // Like native runs: a passing trial's outputs are dropped unless --keep-outputs.
        if (!body.value("keep_outputs", false)) {
            std::error_code ignored;
            fs::remove(reference, ignored);
            fs::remove(candidate, ignored);
            body["outputs"] = json::object();
        }
    }
}

} // namespace pkbw::cli::detail
