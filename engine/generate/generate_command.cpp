#include "generate_command.h"

#include "command_output.h"
#include "model_client.h"
#include "pkbw/core/error.h"
#include "pkbw/core/generation_store.h"
#include "store_recorder.h"

#include <atomic>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

namespace pkbw::generate {

namespace fs = std::filesystem;

std::string expand_problem_ranges(const std::string& text) {
    if (text == "all" || text.find('-') == std::string::npos ||
        text.find_first_not_of("0123456789-, ") != std::string::npos)
        return text; // a stem ("2_allgather"), a list, or all
    std::vector<std::string> items;
    std::stringstream parts(text);
    std::string part;
    while (std::getline(parts, part, ',')) {
        part.erase(0, part.find_first_not_of(' '));
        part.erase(part.find_last_not_of(' ') + 1);
        auto dash = part.find('-');
        if (dash == std::string::npos) {
            items.push_back(part);
            continue;
        }
        int from = std::stoi(part.substr(0, dash)), to = std::stoi(part.substr(dash + 1));
        if (from > to || to - from > 1000)
            throw Error("--problems '" + text + "': bad range " + part);
        for (int i = from; i <= to; ++i)
            items.push_back(std::to_string(i));
    }
    std::string list = "[";
    for (std::size_t i = 0; i < items.size(); ++i)
        list += (i ? ", " : "") + items[i];
    return list + "]";
}

void add_provider_options(CLI::App& command, GenerateOptions& o) {
    command
        .add_option("--model", o.prompt.model,
                    "PROVIDER/MODEL (google, anthropic, openai, together, vllm, local)")
        ->required();
    command.add_option("--base-url", o.base_url,
                       "API base URL (an OpenAI-compatible server, a proxy, a test server)");
    command.add_option("--max-tokens", o.max_tokens,
                       "output tokens asked for (clamped to the model's known cap)");
    command.add_flag("--stream", o.stream, "stream the reply (server-sent events)");
    command.add_option("--retries", o.http.max_retries, "tries after the first on 429/5xx/timeouts (5)");
    command.add_option("--backoff", o.http.backoff_seconds,
                       "first retry wait in seconds, doubled each time (2)");
    command.add_option("--max-backoff", o.http.max_backoff_seconds,
                       "longest wait, Retry-After included (120)");
    command.add_option("--timeout", o.http.total_seconds, "seconds one request may take (3600)");
    command.add_option("--stall-timeout", o.http.stall_seconds,
                       "seconds without a byte before giving up a try (300)");
    command.add_option("--connect-timeout", o.http.connect_seconds, "seconds to connect (30)");
    command.add_option("--store", o.prompt.store,
                       "SQLite store (default $PKBW_STORE, else ~/.local/share/pkbw/runs.db)");
    command.add_option("--pkb-checkout", o.prompt.pkb_checkout,
                       "ParallelKernelBench checkout (PKB backends)");
    command.add_option("--precision", o.prompt.precision, "bf16 | fp16 | fp32");
    command.add_option("--hardware", o.prompt.hardware,
                       "PKB hardware profile (h100_8, b200_72) or free text (native)");
    command.add_option("--output-root", o.output_root,
                       "where the solutions_* folder is written (default: the PKB checkout, else .)");
    command.add_flag("--json", o.json,
                     "JSON lines on stdout, one {\"event\": ...} object per line: progress, results, the end "
                     "(docs/generate.md)");
}

void add_generate_options(CLI::App& command, GenerateOptions& o) {
    command.add_option("-p,--problems,--problem", o.prompt.problem, "1-20, 1,3,5, a stem, or all")
        ->required();
    command.add_option("--backend", o.prompt.backend, "cuda | triton | parallelkittens | native | host");
    command.add_option("--samples", o.samples, "answers per problem (k)")->check(CLI::Range(1, 1000));
    command.add_option("--concurrency", o.concurrency, "requests in flight at once (4)")
        ->check(CLI::Range(1, 64));
    command.add_option("--nproc", o.prompt.nproc, "native: world size W the prompt describes (2)");
    add_provider_options(command, o);
}

namespace {

struct Job {
    const AssembledPrompt* prompt;
    int sample;
};

} // namespace

namespace {

GenerationRow generate_row(const GenerateOptions& options, const ModelSpec& model,
                           const ProviderSettings& provider, const std::string& folder,
                           const fs::path& root) {
    GenerationRow row = model_generation_row("generate", options.prompt, model, provider);
    row.label = folder;
    row.output_dir = (root / folder).string();
    nlohmann::json settings{{"samples", options.samples},
                            {"max_tokens", effective_max_tokens(model, options.max_tokens)},
                            {"stream", options.stream},
                            {"concurrency", options.concurrency},
                            {"retries", options.http.max_retries},
                            {"backoff_s", options.http.backoff_seconds},
                            {"timeout_s", options.http.total_seconds},
                            {"stall_timeout_s", options.http.stall_seconds}};
    row.settings = settings.dump();
    row.command_line = nlohmann::json(options.command_line).dump();
    return row;
}

// Where the generation's files go: --output-root, else the working directory for a native backend,
// else the PKB checkout (--pkb-checkout or PKB_CHECKOUT).
fs::path output_root(const GenerateOptions& options, const PromptOptions& prompt_options) {
    return options.output_root ? fs::path(*options.output_root)
           : is_native_backend(prompt_options.backend)
               ? fs::path(".")
               : fs::path(prompt_options.pkb_checkout ? *prompt_options.pkb_checkout
                                                      : std::string(std::getenv("PKB_CHECKOUT")));
}

// The file one job's answer is saved to.
fs::path sample_file(const fs::path& root, const Job& job, int samples) {
    fs::path relative(job.prompt->relative_path);
    // k > 1: sample_<i>/ inside the generation folder (PKB has no samples).
    return samples == 1 ? root / relative
                        : root / relative.parent_path() / ("sample_" + std::to_string(job.sample)) /
                              relative.filename();
}

// One answer as an event and as a line: its outcome, where it was saved, its tries and cost.
void report_answer(CommandOutput& output, const Job& job, const AskResult& r, const fs::path& file,
                   int samples) {
    output.event("answer",
                 {{"problem", job.prompt->stem},
                  {"sample", job.sample},
                  {"outcome", r.outcome},
                  {"path", r.outcome == "saved" ? nlohmann::json(file.string()) : nlohmann::json(nullptr)},
                  {"message", r.message},
                  {"tries", r.tries},
                  {"cost_usd", r.cost_usd ? nlohmann::json(*r.cost_usd) : nlohmann::json(nullptr)}});
    output.result(job.prompt->stem + (samples > 1 ? " sample " + std::to_string(job.sample) : "") + ": " +
                  r.outcome + (r.outcome == "saved" ? " " + file.string() : "") +
                  (r.message.empty() ? "" : " (" + r.message + ")"));
}

} // namespace

int run_generate_command(const GenerateOptions& options) {
    try {
        PromptOptions prompt_options = options.prompt;
        prompt_options.problem = expand_problem_ranges(options.prompt.problem);
        ModelSpec model = parse_model_spec(prompt_options.model);
        std::vector<AssembledPrompt> prompts = assemble_prompts(prompt_options);
        const ProviderSettings provider = provider_settings(options, model);

        fs::path root = output_root(options, prompt_options);
        const std::string folder = fs::path(prompts.front().relative_path).parent_path().string();

        fs::path store_path = cli::resolve_store_path(prompt_options.store);
        Store store = Store::open(store_path);
        const GenerationRow row = generate_row(options, model, provider, folder, root);
        const std::int64_t generation_id = add_generation(store, row);
        CommandOutput output(options.json, std::cout, std::cerr);
        output.event("generation_started", {{"generation_id", generation_id},
                                            {"problems", prompts.size()},
                                            {"samples", options.samples},
                                            {"model", prompt_options.model},
                                            {"folder", (root / folder).string()}});
        if (!options.json)
            std::cerr << "generation " << generation_id << ": " << prompts.size() << " problem(s) x "
                      << options.samples << " sample(s) from " << prompt_options.model << " into "
                      << (root / folder).string() << "\n";

        ModelClient client(model, provider, options.http, &store, generation_id);
        report_retries(client, output, options.http.max_retries);
        std::vector<Job> jobs;
        for (const auto& p : prompts)
            for (int s = 0; s < options.samples; ++s)
                jobs.push_back({&p, s});
        std::atomic<std::size_t> next{0};
        std::atomic<int> saved{0};
        std::mutex out_mutex;
        double total_cost = 0;
        auto worker = [&] {
            for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();) {
                const Job& job = jobs[i];
                const fs::path file = sample_file(root, job, options.samples);
                AskRequest request{
                    job.prompt->stem,     job.sample, 0, job.prompt->system, {{"user", job.prompt->user}},
                    job.prompt->language, file};
                AskResult r;
                try {
                    r = client.ask(request);
                } catch (const std::exception& e) {
                    r.outcome = "error";
                    r.message = e.what();
                }
                std::lock_guard lock(out_mutex);
                if (r.outcome == "saved")
                    ++saved;
                total_cost += r.cost_usd.value_or(0);
                report_answer(output, job, r, file, options.samples);
            }
        };
        std::vector<std::thread> threads;
        int n = std::min<int>(options.concurrency, static_cast<int>(jobs.size()));
        for (int t = 0; t < n; ++t)
            threads.emplace_back(worker);
        for (auto& t : threads)
            t.join();
        finish_generation(store, generation_id, saved == static_cast<int>(jobs.size()) ? "done" : "failed");
        const int code = saved == static_cast<int>(jobs.size()) ? 0 : 1;
        output.event("generation_finished", {{"generation_id", generation_id},
                                             {"saved", saved.load()},
                                             {"total", jobs.size()},
                                             {"cost_usd", total_cost},
                                             {"exit_code", code}});
        if (!options.json)
            std::cerr << "generation " << generation_id << ": " << saved << "/" << jobs.size()
                      << " saved; estimated cost $" << total_cost << " (pkbw generation " << generation_id
                      << ")\n";
        return code;
    } catch (const Error& error) {
        std::cerr << "pkbw generate: " << error.what() << "\n";
        return 2;
    }
}

void report_retries(ModelClient& client, CommandOutput& output, int max_retries) {
    client.on_retry([&output, max_retries](const AskRequest& request, int try_number,
                                           const std::string& why) {
        const std::string who = request.stem +
                                (request.sample > 0 ? " sample " + std::to_string(request.sample) : "") +
                                (request.attempt > 0 ? " attempt " + std::to_string(request.attempt) : "");
        output.progress("retry",
                        {{"problem", request.stem},
                         {"sample", request.sample},
                         {"attempt", request.attempt},
                         {"try", try_number + 1},
                         {"tries", max_retries + 1},
                         {"message", why}},
                        who + ": try " + std::to_string(try_number + 1) + " of " +
                            std::to_string(max_retries + 1) + " failed (" + why + "); retrying");
    });
}

ProviderSettings provider_settings(const GenerateOptions& options, const ModelSpec& model) {
    ProviderSettings provider;
    provider.base_url = options.base_url ? *options.base_url : model.default_base_url;
    while (!provider.base_url.empty() && provider.base_url.back() == '/')
        provider.base_url.pop_back();
    if (provider.base_url.empty())
        throw Error("--model " + options.prompt.model + ": pass --base-url for a local server");
    provider.max_tokens = options.max_tokens;
    provider.stream = options.stream;
    provider.key = key_from_environment(model, true);
    return provider;
}

GenerationRow model_generation_row(std::string kind, const PromptOptions& prompt, const ModelSpec& model,
                                   const ProviderSettings& provider) {
    GenerationRow row;
    row.kind = std::move(kind);
    row.provider = model.provider;
    row.model = model.model;
    row.wire_format = wire_format_name(model.wire);
    row.base_url = provider.base_url;
    row.backend = prompt.backend;
    row.precision = prompt.precision;
    row.hardware = prompt.hardware.value_or("");
    return row;
}

} // namespace pkbw::generate
