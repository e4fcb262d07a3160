#include "agent_command.h"

#include "command_output.h"
#include "judge_reader.h"
#include "locate.h"
#include "model_client.h"
#include "pkbw/core/error.h"
#include "pkbw/core/generation_store.h"
#include "pkbw/core/status.h"
#include "pkbw/core/sweep_table.h"
#include "pkbw/problems/registry.h"
#include "store_recorder.h"
#include "subprocess.h"

#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace pkbw::generate {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string number(double v) {
    std::ostringstream s;
    s << std::setprecision(4) << v;
    return s.str();
}

// The judge's own progress (`pkbw eval --json`'s progress events), passed on for attempt `attempt`.
void forward_judge_progress(CommandOutput& output, int attempt, const json& event) {
    const std::string stage = event.value("stage", "");
    std::string text = "attempt " + std::to_string(attempt) + ": ";
    if (stage == "trial")
        text += "trial " + std::to_string(event.value("trial", 0) + 1) + "/" +
                std::to_string(event.value("trials", 0)) + " " + event.value("status", "");
    else if (stage == "perf_block")
        text += "perf launch " + std::to_string(event.value("launch", 0)) + "/" +
                std::to_string(event.value("launches", 0)) + ", block " +
                std::to_string(event.value("block", 0)) + "/" + std::to_string(event.value("blocks", 0)) +
                " timed";
    else if (stage == "perf_launch")
        text += "perf launch " + std::to_string(event.value("launch", 0)) + "/" +
                std::to_string(event.value("launches", 0)) + " started";
    else
        return;
    json body = event;
    body.erase("event");
    body.erase("stage");
    body["attempt"] = attempt;
    output.progress("judge_" + stage, std::move(body), text);
}

} // namespace

Verdict verdict_from_judge_output(const std::string& output, const std::string& source) {
    JudgeOutputReader reader;
    reader.feed(output);
    reader.finish();
    return reader.verdict(source);
}

void add_agent_options(CLI::App& command, AgentOptions& o) {
    command.add_option("-p,--problem", o.generate.prompt.problem, "problem number or stem")->required();
    command.add_option("--attempts", o.attempts, "attempts at most (5)")->check(CLI::Range(1, 100));
    command.add_option("--budget-usd", o.budget_usd, "stop once the estimated cost reaches this (5)");
    command
        .add_option("--backend", o.generate.prompt.backend,
                    "host | native (pkbw's ABI; cuda means native without --pkb-checkout) | cuda | "
                    "triton | parallelkittens (PKB's Python backends, with --pkb-checkout)")
        ->check(CLI::IsMember({"host", "native", "cuda", "triton", "parallelkittens"}));
    command
        .add_option("--judge-backend", o.judge_backend,
                    "PKB backends: where pkbw runs the candidate, cuda (default) or host (gloo on the "
                    "CPU, for solutions that run there)")
        ->check(CLI::IsMember({"cuda", "host"}));
    command.add_option("--nproc", o.generate.prompt.nproc, "world size W (2)");
    command.add_flag("--perf", o.perf, "judge with pkbw perf and iterate until faster than the reference");
    command.add_option("--pkbw", o.pkbw_program, "the pkbw that judges (default: this one)");
    command.add_option("--judge-arg", o.judge_arguments, "an extra flag for the judge (repeatable)");
    add_provider_options(command, o.generate);
}

namespace {

// What an agent run judges with, settled before its first attempt.
struct AgentJudge {
    bool pkb = false;     // PKB's Python backend, judged through `pkbw eval --pkb-checkout`
    std::string checkout; // that checkout, absolute
    std::string target;   // where the judge runs the candidate: pkbw's --backend (host or cuda)
    fs::path file;        // the candidate's file
    fs::path store_path;
    std::string pkbw; // the judging program
};

// PKB's backend or pkbw's, and PKB's checkout; the prompt's backend and checkout are updated to match.
AgentJudge choose_judge(PromptOptions& prompt_options, const AgentOptions& options) {
    // PKB's Python backends are judged through `pkbw eval --pkb-checkout` (docs/pkb-interop.md).
    // `--backend cuda` names PKB's backend only when a checkout is given on the command line, so
    // that `pkbw agent --backend cuda` keeps meaning pkbw's native ABI.
    AgentJudge judge;
    const bool pkb = judge.pkb = prompt_options.backend == "triton" ||
                                 prompt_options.backend == "parallelkittens" ||
                                 (prompt_options.backend == "cuda" && prompt_options.pkb_checkout);
    if (prompt_options.backend == "cuda" && !pkb)
        prompt_options.backend = "native";
    std::string& checkout = judge.checkout;
    if (pkb) {
        if (prompt_options.pkb_checkout)
            checkout = *prompt_options.pkb_checkout;
        else if (const char* env = std::getenv("PKB_CHECKOUT"))
            checkout = env;
        if (checkout.empty())
            throw Error("--backend " + prompt_options.backend +
                        " is one of PKB's: pass --pkb-checkout DIR (or set $PKB_CHECKOUT)");
        checkout = fs::absolute(checkout).string();
        prompt_options.pkb_checkout = checkout;
    } else if (!is_native_backend(prompt_options.backend)) {
        throw Error("--backend " + prompt_options.backend + " needs --pkb-checkout DIR");
    }
    // Where the judge runs the candidate: pkbw's --backend (host or cuda).
    judge.target = pkb ? options.judge_backend : prompt_options.backend == "host" ? "host" : "cuda";
    return judge;
}

GenerationRow generation_row(const AgentOptions& options, const AgentJudge& judge,
                             const AssembledPrompt& prompt, const ModelSpec& model,
                             const ProviderSettings& provider) {
    GenerationRow row = model_generation_row("agent", options.generate.prompt, model, provider);
    row.label = fs::path(prompt.relative_path).parent_path().string();
    row.output_dir = judge.file.parent_path().string();
    row.settings = json{{"attempts", options.attempts},
                        {"budget_usd", options.budget_usd},
                        {"perf", options.perf},
                        {"nproc", options.generate.prompt.nproc},
                        {"judge_backend", judge.target},
                        {"pkb_checkout", judge.pkb ? json(judge.checkout) : json()},
                        {"max_tokens", effective_max_tokens(model, options.generate.max_tokens)}}
                       .dump();
    row.command_line = json(options.generate.command_line).dump();
    return row;
}

// Runs `pkbw eval` (or perf) on the saved reply and reads its verdict, forwarding its progress.
Verdict judge_reply(const AgentOptions& options, const AgentJudge& judge, const AssembledPrompt& prompt,
                    CommandOutput& output, int attempt, const std::string& code) {
    const PromptOptions& prompt_options = options.generate.prompt;
    std::vector<std::string> argv{judge.pkbw,
                                  options.perf ? "perf" : "eval",
                                  "--problem",
                                  prompt.stem,
                                  "--solution",
                                  fs::absolute(judge.file).string(),
                                  "--backend",
                                  judge.target,
                                  "--nproc",
                                  std::to_string(prompt_options.nproc),
                                  "--dtype",
                                  prompt_options.precision == "fp32"   ? "f32"
                                  : prompt_options.precision == "fp16" ? "f16"
                                                                       : prompt_options.precision,
                                  "--store",
                                  judge.store_path.string(),
                                  "--json"};
    if (judge.pkb) {
        argv.push_back("--pkb-checkout");
        argv.push_back(judge.checkout);
    }
    argv.insert(argv.end(), options.judge_arguments.begin(), options.judge_arguments.end());
    // Read as it comes, whatever its size: the output is never cut (judge_reader.h).
    JudgeOutputReader reader;
    reader.on_progress = [&output, attempt](const json& event) {
        forward_judge_progress(output, attempt, event);
    };
    output.progress("judge", {{"attempt", attempt}, {"command", options.perf ? "perf" : "eval"}},
                    "attempt " + std::to_string(attempt) + ": judging with pkbw " +
                        (options.perf ? "perf" : "eval"));
    const cli::ProcessResult judged = cli::run_process(
        argv, cli::current_environment(), 1800, 0, [&reader](std::string_view bytes) { reader.feed(bytes); });
    if (!judged.started)
        reader.feed(judged.output); // why it could not run
    reader.finish();
    return reader.verdict(code);
}

// Stores the attempt with its verdict and reports it; true when the agent is done. Feedback for the
// next attempt goes onto `turns`.
bool record_attempt(Store& store, CommandOutput& output, const AgentOptions& options, AgentAttemptRow& a,
                    const Verdict& verdict, const std::string& reply_text, std::vector<ChatTurn>& turns,
                    std::string& stop_reason) {
    const int attempt = a.attempt;
    a.verdict = verdict.status;
    a.run_id = verdict.run_id > 0 ? std::optional<std::int64_t>(verdict.run_id) : std::nullopt;
    a.speedup = verdict.speedup;
    bool passed = verdict.status == status::kPass;
    // fast_1's rule (core's counts_toward_fast_p): the speedup's interval must clear 1.
    a.fast = counts_toward_fast_p(passed, verdict.speedup, verdict.ci_low, 1.0);
    const bool done = options.perf ? a.fast : passed;
    if (!done) {
        a.feedback = verdict.feedback +
                     (passed ? "\nIt is correct but not faster than the reference; make it faster.\n"
                             : "\nFix the candidate and answer with the complete file again.\n");
        turns.push_back({"assistant", reply_text});
        turns.push_back({"user", a.feedback});
    }
    add_agent_attempt(store, a);
    output.event("attempt", {{"attempt", attempt},
                             {"verdict", verdict.status},
                             {"run_id", a.run_id ? json(*a.run_id) : json(nullptr)},
                             {"speedup", verdict.speedup ? json(*verdict.speedup) : json(nullptr)},
                             {"fast", a.fast},
                             {"feedback", a.feedback}});
    output.result("attempt " + std::to_string(attempt) + ": " + verdict.status +
                  (a.run_id ? " (run " + std::to_string(*a.run_id) + ")" : "") +
                  (verdict.speedup ? " speedup " + number(*verdict.speedup) + "x" : ""));
    if (done)
        stop_reason = options.perf ? "passes and is faster" : "passes";
    return done;
}

// Where the judge finds the candidate, the store and the judging program.
void place_judge(const AgentOptions& options, const PromptOptions& prompt_options,
                 const AssembledPrompt& prompt, AgentJudge& judge) {
    // As `pkbw generate` (and PKB): a PKB generation folder goes into the checkout by default.
    fs::path root = options.generate.output_root ? fs::path(*options.generate.output_root)
                    : judge.pkb                  ? fs::path(judge.checkout)
                                                 : fs::path(".");
    judge.file = root / prompt.relative_path;
    judge.store_path = cli::resolve_store_path(prompt_options.store);
    judge.pkbw =
        options.pkbw_program.empty() ? (cli::executable_dir() / "pkbw").string() : options.pkbw_program;
}

// An attempt's row as the reply left it (its verdict and feedback come after judging).
AgentAttemptRow attempt_row(std::int64_t generation_id, const std::string& stem, int attempt,
                            const AskResult& reply) {
    AgentAttemptRow a;
    a.generation_id = generation_id;
    a.problem_stem = stem;
    a.attempt = attempt;
    if (attempt > 1)
        a.parent_attempt = attempt - 1;
    a.exchange_id = reply.exchange_id;
    a.cost_usd = reply.cost_usd;
    a.source = reply.code;
    return a;
}

} // namespace

int run_agent_command(const AgentOptions& input) {
    try {
        AgentOptions options = input;
        PromptOptions& prompt_options = options.generate.prompt;
        AgentJudge judge = choose_judge(prompt_options, options);
        ModelSpec model = parse_model_spec(prompt_options.model);
        auto prompts = assemble_prompts(prompt_options);
        if (prompts.size() != 1)
            throw Error("pkbw agent works on one problem (--problem N)");
        const AssembledPrompt& prompt = prompts.front();

        ProviderSettings provider = provider_settings(options.generate, model);

        place_judge(options, prompt_options, prompt, judge);
        const fs::path& file = judge.file;
        const fs::path& store_path = judge.store_path;

        Store store = Store::open(store_path);
        const GenerationRow row = generation_row(options, judge, prompt, model, provider);
        const std::int64_t generation_id = add_generation(store, row);
        CommandOutput output(options.generate.json, std::cout, std::cerr);
        output.event("agent_started", {{"generation_id", generation_id},
                                       {"problem", prompt.stem},
                                       {"model", prompt_options.model},
                                       {"attempts", options.attempts},
                                       {"budget_usd", options.budget_usd}});
        if (!output.json())
            std::cerr << "agent generation " << generation_id << ": " << prompt.stem << " with "
                      << prompt_options.model << ", at most " << options.attempts << " attempts and $"
                      << options.budget_usd << "\n";

        ModelClient client(model, provider, options.generate.http, &store, generation_id);
        report_retries(client, output, options.generate.http.max_retries);
        std::vector<ChatTurn> turns{{"user", prompt.user}};
        double spent = 0;
        bool done = false;
        std::string stop_reason = "attempts exhausted";
        for (int attempt = 1; attempt <= options.attempts && !done; ++attempt) {
            if (spent >= options.budget_usd) {
                stop_reason = "budget reached";
                break;
            }
            output.progress("attempt", {{"attempt", attempt}, {"attempts", options.attempts}},
                            "attempt " + std::to_string(attempt) + "/" + std::to_string(options.attempts) +
                                ": asking " + prompt_options.model);
            AskResult reply =
                client.ask({prompt.stem, 0, attempt, prompt.system, turns, prompt.language, file});
            spent += reply.cost_usd.value_or(0);
            AgentAttemptRow a = attempt_row(generation_id, prompt.stem, attempt, reply);
            Verdict verdict;
            if (reply.outcome == "http_error") {
                a.verdict = "http_error";
                a.feedback = reply.message;
                add_agent_attempt(store, a);
                output.event("attempt",
                             {{"attempt", attempt}, {"verdict", "http_error"}, {"message", reply.message}});
                output.result("attempt " + std::to_string(attempt) + ": http_error (" + reply.message + ")");
                stop_reason = "provider error";
                break;
            }
            if (reply.outcome != "saved") {
                verdict.status = reply.outcome;
                verdict.feedback = "Your reply could not be used: " + reply.message +
                                   ". Answer with the complete source file in one fenced ```" +
                                   prompt.language + " block.";
            } else {
                verdict = judge_reply(options, judge, prompt, output, attempt, reply.code);
            }
            done = record_attempt(store, output, options, a, verdict, reply.reply_text, turns, stop_reason);
        }
        finish_generation(store, generation_id, done ? "done" : "failed");
        output.event("agent_finished", {{"generation_id", generation_id},
                                        {"status", done ? "done" : "failed"},
                                        {"stop_reason", stop_reason},
                                        {"cost_usd", spent},
                                        {"exit_code", done ? 0 : 1}});
        if (!output.json()) {
            std::cout << "stopped: " << stop_reason << "; estimated cost $" << spent << "\n";
            show_generation(store_path.string(), generation_id, std::cout, std::cerr);
        }
        return done ? 0 : 1;
    } catch (const Error& error) {
        std::cerr << "pkbw agent: " << error.what() << "\n";
        return 2;
    }
}

int show_generation(const std::optional<std::string>& store_flag, std::int64_t generation_id,
                    std::ostream& out, std::ostream& err) {
    Store store = Store::open_read_only(cli::resolve_store_path(store_flag));
    auto g = get_generation(store, generation_id);
    if (!g) {
        err << "pkbw: no generation " << generation_id << " in " << store.path().string() << "\n";
        return 1;
    }
    out << "generation " << g->id << " (" << g->kind << "): " << g->provider << "/" << g->model << " via "
        << g->wire_format << " " << g->base_url << "\n  folder " << g->output_dir << "\n  " << g->started_at
        << " to " << (g->ended_at.empty() ? "?" : g->ended_at) << ", " << g->status << "; settings "
        << g->settings << "\n";
    auto exchanges = generation_exchanges(store, generation_id);
    double cost = 0;
    out << "exchanges:\n";
    for (const auto& e : exchanges) {
        cost += e.cost_usd.value_or(0);
        out << "  #" << e.id << " " << e.problem_stem << " sample " << e.sample << " attempt " << e.attempt
            << " try " << e.try_number << ": " << e.outcome;
        if (e.http_status)
            out << " HTTP " << *e.http_status;
        if (!e.finish_reason.empty())
            out << " finish " << e.finish_reason;
        if (e.input_tokens || e.output_tokens)
            out << " tokens " << e.input_tokens.value_or(0) << "/" << e.output_tokens.value_or(0);
        if (e.latency_ms)
            out << " " << number(*e.latency_ms) << " ms";
        if (e.cost_usd)
            out << " $" << number(*e.cost_usd);
        if (!e.message.empty())
            out << " - " << e.message;
        out << "\n";
    }
    auto attempts = agent_attempts(store, generation_id);
    if (!attempts.empty()) {
        out << "trajectory:\n  attempt  parent  verdict          run     speedup  fast  diff\n";
        std::string previous;
        std::map<std::string, int> first_fast, first_pass;
        for (const auto& a : attempts) {
            // The diff to the previous source, as changed-line counts (the GUI shows the diff itself).
            int changed = 0;
            if (!previous.empty() || a.attempt > 1) {
                std::istringstream x(previous), y(a.source);
                std::string lx, ly;
                while (true) {
                    bool gx = static_cast<bool>(std::getline(x, lx)),
                         gy = static_cast<bool>(std::getline(y, ly));
                    if (!gx && !gy)
                        break;
                    if (!gx || !gy || lx != ly)
                        ++changed;
                }
            }
            char lineb[200];
            std::snprintf(lineb, sizeof lineb, "  %7d  %6s  %-15s  %-6s  %7s  %-4s  %s\n", a.attempt,
                          a.parent_attempt ? std::to_string(*a.parent_attempt).c_str() : "-",
                          a.verdict.c_str(), a.run_id ? std::to_string(*a.run_id).c_str() : "-",
                          a.speedup ? (number(*a.speedup) + "x").c_str() : "-", a.fast ? "yes" : "no",
                          a.attempt == 1 ? "(first)" : (std::to_string(changed) + " lines changed").c_str());
            out << lineb;
            if (a.verdict == status::kPass && !first_pass.count(a.problem_stem))
                first_pass[a.problem_stem] = a.attempt;
            if (a.fast && !first_fast.count(a.problem_stem))
                first_fast[a.problem_stem] = a.attempt;
            previous = a.source;
        }
        int k_max = attempts.back().attempt;
        out << "  correct@k (first pass at attempt k) and fast1@k (correct and speedup > 1), over the "
               "attempts made:\n";
        for (int k = 1; k <= k_max; ++k) {
            int correct = 0, fast = 0;
            for (const auto& [stem, at] : first_pass)
                correct += at <= k;
            for (const auto& [stem, at] : first_fast)
                fast += at <= k;
            int problems = static_cast<int>(std::max<std::size_t>(1, first_pass.size() + 0));
            (void)problems;
            out << "    k=" << k << ": correct " << correct << ", fast1 " << fast << "\n";
        }
    }
    out << "estimated cost: $" << number(cost) << "\n";
    return 0;
}

} // namespace pkbw::generate
