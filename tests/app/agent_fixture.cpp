#include "agent_fixture.h"

#include "agent_command.h"
#include "fake_provider.h"
#include "generate_command.h"
#include "pkbw/core/generation_store.h"
#include "pkbw/core/store.h"

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace pkbw::test {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// An OpenAI-style chat completion (written for these tests, not recorded from a provider).
std::string chat_reply(const std::string& text, int prompt_tokens, int completion_tokens) {
    return json{{"choices", json::array({{{"message", {{"role", "assistant"}, {"content", text}}},
                                          {"finish_reason", "stop"}}})},
                {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}}}}
        .dump();
}

// Wrong: every rank copies its own input and skips the peers' contributions.
const char* const kWrong = R"(#include "pkbw/solution.h"
#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    std::memcpy(ctx.output(0).data, ctx.input(0).data, ctx.input(0).nbytes());
    return 0;
}
)";

// Does not compile: line 5 calls a function nobody declared.
const char* const kBroken = R"(#include "pkbw/solution.h"
#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    sum_the_peers(ctx);
    return 0;
}
)";

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// Runs a command, returns its exit status and appends its output to `log`.
int run_command(const std::string& command, std::string& log) {
    log += "$ " + command + "\n";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((command + " 2>&1").c_str(), "r"), pclose);
    if (!pipe)
        return -1;
    std::array<char, 4096> buffer{};
    while (std::fgets(buffer.data(), buffer.size(), pipe.get()))
        log += buffer.data();
    const int status = pclose(pipe.release());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

AgentFixture make_agent_store(const fs::path& dir, const std::string& pkbw_program,
                              const fs::path& source_root) {
    AgentFixture out;
    fs::create_directories(dir);
    out.store = dir / "runs.db";
    const fs::path samples = source_root / "samples/solutions_host_f32_none_samples_baseline";
    const std::string right = read_text(samples / "1_allreduce_host.cpp");

    FakeProvider server;
    server.push({200, chat_reply("Copy the input.\n```cpp\n" + std::string(kWrong) + "```\n", 812, 64)});
    server.push({200, chat_reply("Sum with a helper.\n```cpp\n" + std::string(kBroken) + "```\n", 1204, 58)});
    server.push({200, chat_reply("Sum every peer's buffer.\n```cpp\n" + right + "```\n", 1630, 171)});

    generate::AgentOptions agent;
    agent.generate.prompt.problem = "1";
    agent.generate.prompt.backend = "host";
    agent.generate.prompt.precision = "fp32";
    agent.generate.prompt.nproc = 2;
    agent.generate.prompt.model = "local/scripted-test-model";
    agent.generate.prompt.store = out.store.string();
    agent.generate.base_url = server.base_url();
    agent.generate.output_root = (dir / "agent").string();
    agent.generate.http.max_retries = 0;
    agent.attempts = 5;
    agent.budget_usd = 1;
    agent.pkbw_program = pkbw_program;
    agent.judge_arguments = {"--trials", "1", "--m", "64", "--n", "64"};
    if (int code = generate::run_agent_command(agent); code != 0)
        throw std::runtime_error("pkbw agent (scripted) exited " + std::to_string(code));

    // pkbw generate: problem 2 answered with the sample all-gather, then judged by pkbw eval.
    server.push({200, chat_reply("Gather every rank's block.\n```cpp\n" +
                                     read_text(samples / "2_allgather_host.cpp") + "```\n",
                                 950, 140)});
    generate::GenerateOptions gen;
    gen.prompt = agent.generate.prompt;
    gen.prompt.problem = "2";
    gen.base_url = server.base_url();
    gen.output_root = (dir / "generated").string();
    gen.http.max_retries = 0;
    gen.concurrency = 1;
    if (int code = generate::run_generate_command(gen); code != 0)
        throw std::runtime_error("pkbw generate (scripted) exited " + std::to_string(code));

    {
        const Store store = Store::open_read_only(out.store);
        for (const auto& g : list_generations(store)) {
            (g.kind == "agent" ? out.agent_generation : out.generate_generation) = g.id;
        }
        if (!out.agent_generation || !out.generate_generation)
            throw std::runtime_error("the scripted generations are not in " + out.store.string());
        const auto exchanges = generation_exchanges(store, out.generate_generation);
        if (exchanges.empty() || exchanges.back().solution_path.empty())
            throw std::runtime_error("pkbw generate saved no solution");
        const std::string solution = exchanges.back().solution_path;
        const std::string command = shell_quote(pkbw_program) + " eval --problem 2 --solution " +
                                    shell_quote(solution) +
                                    " --backend host --nproc 2 --dtype f32 --trials 1 "
                                    "--m 64 --n 64 --store " +
                                    shell_quote(out.store.string());
        run_command(command, out.log);
    }
    const Store store = Store::open_read_only(out.store);
    for (const auto& run : store.list_runs({})) {
        if (run.problem_stem == "2_allgather")
            out.generated_run = std::max(out.generated_run, run.id);
    }
    if (!out.generated_run)
        throw std::runtime_error("pkbw eval of the generated candidate recorded no run:\n" + out.log);
    return out;
}

} // namespace pkbw::test
