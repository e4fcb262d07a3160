#include "prompt_command.h"

#include "locate.h"
#include "model_spec.h"
#include "native_prompt.h"
#include "pkb_prompt.h"
#include "pkbw/core/error.h"
#include "pkbw/core/store.h"
#include "pkbw/problems/registry.h"
#include "store_recorder.h"
#include "suggest.h"

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace pkbw::generate {

namespace fs = std::filesystem;

bool is_native_backend(const std::string& backend) {
    return backend == "native" || backend == "host";
}

namespace {

// The GPUs of the store's latest run that recorded any, as the native prompt's hardware line.
std::string hardware_from_store(const std::optional<std::string>& store_flag) {
    try {
        fs::path path = cli::resolve_store_path(store_flag);
        if (!fs::exists(path))
            return {};
        Store store = Store::open_read_only(path, Store::Missing::Fail);
        for (const auto& run : store.list_runs({}, {}, 50))
            if (!run.gpu_names.empty() && run.backend != "host") { // host runs name no GPU
                std::string text = std::to_string(run.gpu_names.size()) + " x " + run.gpu_names.front();
                return text + " (as seen by run " + std::to_string(run.id) + " in the store)";
            }
    } catch (const Error&) {
        // No store, or an unreadable one: the prompt simply has no hardware line.
    }
    return {};
}

std::vector<const Problem*> resolve_native_problems(const std::string& argument) {
    std::vector<const Problem*> problems;
    if (argument == "all")
        return all_problems();
    std::stringstream parts(argument.starts_with("[") && argument.ends_with("]")
                                ? argument.substr(1, argument.size() - 2)
                                : argument);
    std::string part;
    while (std::getline(parts, part, ',')) {
        part.erase(0, part.find_first_not_of(' '));
        part.erase(part.find_last_not_of(' ') + 1);
        if (part.empty())
            continue;
        const Problem* p = find_problem(part);
        if (p == nullptr)
            throw Error("--problem: " + cli::unknown_problem_message(part));
        problems.push_back(p);
    }
    return problems;
}

} // namespace

std::vector<AssembledPrompt> assemble_prompts(const PromptOptions& options) {
    ModelSpec model = parse_model_spec(options.model);
    std::vector<AssembledPrompt> prompts;
    if (is_native_backend(options.backend)) {
        const std::string target = options.backend == "host" ? "host" : "cuda";
        cli::DataLayout layout = cli::locate_data();
        NativeSources sources{layout.root, {}};
        for (const auto& header : layout.abi_headers)
            if (header.filename() == "solution.h")
                sources.abi_header = header;
        if (sources.abi_header.empty())
            throw Error("the solution ABI header pkbw/solution.h was not found under " +
                        layout.root.string());
        std::string hardware = options.hardware ? *options.hardware : hardware_from_store(options.store);
        std::string dir =
            pkb_output_dir(options.backend, options.precision, options.hardware, model.provider, model.model);
        for (const Problem* problem : resolve_native_problems(options.problem)) {
            NativePromptRequest request;
            request.problem = problem;
            request.target = target;
            request.precision = options.precision;
            request.world_size = options.nproc;
            request.hardware = hardware;
            request.solution_relative_path =
                dir + "/" + problem->info().stem + "_" + target + "." + native_extension(target);
            prompts.push_back({problem->info().stem, native_system_prompt(target),
                               native_user_prompt(request, sources), request.solution_relative_path,
                               target == "host" ? "cpp" : "cuda"});
        }
        return prompts;
    }
    std::string checkout;
    if (options.pkb_checkout)
        checkout = *options.pkb_checkout;
    else if (const char* env = std::getenv("PKB_CHECKOUT"))
        checkout = env;
    if (checkout.empty())
        throw Error("--backend " + options.backend +
                    " is one of PKB's: pass --pkb-checkout DIR (a ParallelKernelBench checkout) or set "
                    "$PKB_CHECKOUT");
    PkbPrompts pkb = PkbPrompts::load(checkout);
    auto backends = pkb.backends();
    if (std::find(backends.begin(), backends.end(), options.backend) == backends.end())
        throw Error("unknown backend '" + options.backend + "' in " + checkout +
                    "/kernelgen/prompts.toml (native and host are pkbw's own)");
    auto precisions = pkb.precisions();
    if (std::find(precisions.begin(), precisions.end(), options.precision) == precisions.end())
        throw Error("unknown precision '" + options.precision + "' in " + checkout +
                    "/kernelgen/prompts.toml");
    std::string dir =
        pkb_output_dir(options.backend, options.precision, options.hardware, model.provider, model.model);
    for (const auto& stem : pkb.resolve_problems(options.problem)) {
        PkbPromptRequest request{stem, options.backend, options.precision, options.hardware,
                                 dir + "/" + stem + "_" + options.backend + ".py"};
        prompts.push_back({stem, pkb.system_prompt(options.backend), pkb.user_prompt(request),
                           request.solution_relative_path, "python"});
    }
    return prompts;
}

void add_prompt_options(CLI::App& command, PromptOptions& options) {
    command.add_option("-p,--problem", options.problem, "problem number, stem, \"all\" or \"[1, 2]\"")
        ->required();
    command.add_option("--backend", options.backend,
                       "cuda | triton | parallelkittens (PKB's prompts.toml) | native | host (pkbw ABI)");
    command.add_option("--precision", options.precision, "bf16 | fp16 | fp32");
    command.add_option("--hardware", options.hardware,
                       "PKB: a [hardware_profiles] key (h100_8, b200_72); native: free text");
    command.add_option(
        "--pkb-checkout", options.pkb_checkout,
        "ParallelKernelBench checkout whose kernelgen/prompts.toml is used (default $PKB_CHECKOUT)");
    command.add_option("--model", options.model, "PROVIDER/MODEL: names the output folder in the footer");
    command.add_option("--nproc", options.nproc, "native: world size W the contract is written for (2)");
    command.add_option("--store", options.store, "native: store whose latest GPUs describe the hardware");
}

int run_prompt_command(const PromptOptions& options) {
    try {
        for (const auto& prompt : assemble_prompts(options)) {
            if (options.system)
                std::cout << "--- system ---\n" << prompt.system << "\n--- user ---\n";
            std::cout << PkbPrompts::print_block(prompt.stem, prompt.user);
        }
        std::cout.flush();
        return 0;
    } catch (const Error& error) {
        std::cerr << "pkbw prompt: " << error.what() << "\n";
        return 2;
    }
}

} // namespace pkbw::generate
