// The agent loop end to end, offline: a scripted model on the loopback server (its three replies
// were written for this test) answers with a wrong host candidate, then one that does not compile,
// then a right one; pkbw judges each on the host backend, and the trajectory is read from the store.
#include "agent_command.h"
#include "fake_provider.h"
#include "pkbw/core/generation_store.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace pkbw;
using namespace pkbw::generate;
using nlohmann::json;
using pkbw::test::FakeProvider;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string chat_reply(const std::string& text) {
    return json{{"choices", json::array({{{"message", {{"role", "assistant"}, {"content", text}}},
                                          {"finish_reason", "stop"}}})},
                {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 50}}}}
        .dump();
}

// Wrong: every rank returns its own input (the peers' contributions are skipped).
const std::string kWrong = R"(#include "pkbw/solution.h"
#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    std::memcpy(ctx.output(0).data, ctx.input(0).data, ctx.input(0).nbytes());
    return 0;
}
)";

// Does not compile: line 5 uses an undeclared name.
const std::string kBroken = R"(#include "pkbw/solution.h"
#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    undeclared_helper(ctx);
    return 0;
}
)";

} // namespace

TEST(Agent, WrongThenCompileErrorThenRightOnTheHostBackend) {
    fs::path dir = fs::temp_directory_path() / ("pkbw_agent_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string right =
        read_file(fs::path(PKBW_TEST_SOURCE_ROOT) /
                  "samples/solutions_host_f32_none_samples_baseline/1_allreduce_host.cpp");
    FakeProvider server;
    server.push({200, chat_reply("Skip the peers.\n```cpp\n" + kWrong + "```\n")});
    server.push({200, chat_reply("Use a helper.\n```cpp\n" + kBroken + "```\n")});
    server.push({200, chat_reply("Sum every peer's buffer.\n```cpp\n" + right + "```\n")});

    AgentOptions options;
    options.generate.prompt.problem = "1";
    options.generate.prompt.backend = "host";
    options.generate.prompt.precision = "fp32";
    options.generate.prompt.nproc = 2;
    options.generate.prompt.model = "local/scripted-test-model";
    options.generate.prompt.store = (dir / "runs.db").string();
    options.generate.base_url = server.base_url();
    options.generate.output_root = dir.string();
    options.generate.http.max_retries = 0;
    options.attempts = 5;
    options.budget_usd = 1;
    options.pkbw_program = PKBW_PROGRAM;
    options.judge_arguments = {"--trials", "1", "--m", "64", "--n", "64"};
    testing::internal::CaptureStdout();
    int code = run_agent_command(options);
    std::string printed = testing::internal::GetCapturedStdout();
    EXPECT_EQ(code, 0) << printed;
    std::cout << printed;

    Store store = Store::open_read_only(dir / "runs.db");
    auto generations = list_generations(store);
    ASSERT_EQ(generations.size(), 1u);
    EXPECT_EQ(generations[0].kind, "agent");
    EXPECT_EQ(generations[0].status, "done");
    auto attempts = agent_attempts(store, generations[0].id);
    ASSERT_EQ(attempts.size(), 3u) << printed;
    EXPECT_EQ(attempts[0].verdict, "mismatch");
    EXPECT_EQ(attempts[1].verdict, "compile_error");
    EXPECT_EQ(attempts[2].verdict, "pass");
    EXPECT_FALSE(attempts[0].parent_attempt.has_value());
    EXPECT_EQ(attempts[1].parent_attempt, 1);
    EXPECT_EQ(attempts[2].parent_attempt, 2);
    for (const auto& a : attempts) {
        ASSERT_TRUE(a.run_id.has_value()) << a.attempt;
        auto run = store.get_run(*a.run_id);
        ASSERT_TRUE(run.has_value());
        EXPECT_EQ(std::string(to_string(run->status)), a.verdict);
        EXPECT_EQ(agent_attempt_for_run(store, *a.run_id)->attempt, a.attempt);
    }
    EXPECT_EQ(attempts[2].source, right);
    // What the model was told: the mismatch statistics, then the compile error with its line.
    auto received = server.received();
    ASSERT_EQ(received.size(), 3u);
    json second = json::parse(received[1].body);
    std::string feedback1 = second["messages"].back()["content"];
    EXPECT_NE(feedback1.find("mismatch"), std::string::npos) << feedback1;
    EXPECT_NE(feedback1.find("elements outside tolerance"), std::string::npos) << feedback1;
    EXPECT_EQ(second["messages"][2]["role"], "assistant"); // the conversation is kept
    json third = json::parse(received[2].body);
    std::string feedback2 = third["messages"].back()["content"];
    EXPECT_NE(feedback2.find("line 5"), std::string::npos) << feedback2;
    EXPECT_NE(feedback2.find("5 |     undeclared_helper(ctx);"), std::string::npos) << feedback2;
    EXPECT_EQ(generation_exchanges(store, generations[0].id).size(), 3u);
    EXPECT_NE(printed.find("k=3: correct 1, fast1 0"), std::string::npos) << printed;
    EXPECT_NE(printed.find("k=2: correct 0"), std::string::npos) << printed;
    // The file is named as the generation folder says, and holds the passing candidate.
    EXPECT_EQ(read_file(dir / "solutions_host_fp32_none_local_scripted-test-model/1_allreduce_host.cpp"),
              right);
    fs::remove_all(dir);
}

namespace {

// The Python pkbw's PKB path runs (engine/python/pkbw_pkb_rank.py), as tests/engine/pkb_python.sh
// picks it: $PKBW_PYTHON, else Debian's /usr/bin/python3; empty when it has no torch.distributed.
std::string python_with_torch() {
    const char* env = std::getenv("PKBW_PYTHON");
    std::string python = env && *env ? env : "/usr/bin/python3";
    std::string probe =
        "'" + python + "' -c 'import torch, torch.distributed as d; assert d.is_available()' >/dev/null 2>&1";
    return std::system(probe.c_str()) == 0 ? python : std::string();
}

// PKB candidates for the miniature checkout's problem 1 (an all-reduce sum), written for this test.
// Wrong: every rank returns its own input.
const std::string kPkbWrong = R"(import torch


def solution(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.clone()
)";

// Raises when called: a name that does not exist.
const std::string kPkbRaises = R"(import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor) -> torch.Tensor:
    return fused_allreduce_kernel(tensor)
)";

// Right: gathers every rank's tensor and sums them (not the reference's own code).
const std::string kPkbRight = R"(import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor) -> torch.Tensor:
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor.contiguous())
    return torch.stack(parts).sum(dim=0)
)";

} // namespace

// The agent on PKB's cuda backend (Python solutions) through --pkb-checkout: the prompt from the
// miniature checkout's prompts.toml, the python block saved as PKB names it, each attempt judged by
// `pkbw eval --pkb-checkout` on the host backend (gloo on the CPU: the same judge as on a GPU, with
// device "cpu"), and the verdict fed back. Needs torch (Debian's python3-torch); skips without it.
TEST(Agent, PkbPythonBackendJudgedOnTheHost) {
    const std::string python = python_with_torch();
    if (python.empty())
        GTEST_SKIP() << "no Python with torch.distributed ($PKBW_PYTHON or /usr/bin/python3; install "
                        "python3-torch): PKB's Python solutions cannot be judged here";
    fs::path dir = fs::temp_directory_path() / ("pkbw_agent_pkb_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    ::setenv("PKBW_PYTHON", python.c_str(), 1);
    ::setenv("PKBW_CACHE_DIR", (dir / "cache").c_str(), 1);
    const fs::path checkout = fs::path(PKBW_TEST_SOURCE_ROOT) / "tests/generate/data/agent_pkb";

    FakeProvider server;
    server.push({200, chat_reply("Return the input.\n```python\n" + kPkbWrong + "```\n")});
    server.push({200, chat_reply("Call a fused kernel.\n```python\n" + kPkbRaises + "```\n")});
    server.push({200, chat_reply("Gather and sum.\n```python\n" + kPkbRight + "```\n")});

    AgentOptions options;
    options.generate.prompt.problem = "1";
    options.generate.prompt.backend = "cuda";
    options.generate.prompt.precision = "fp32";
    options.generate.prompt.pkb_checkout = checkout.string();
    options.generate.prompt.nproc = 2;
    options.generate.prompt.model = "local/scripted-test-model";
    options.generate.prompt.store = (dir / "runs.db").string();
    options.generate.base_url = server.base_url();
    options.generate.output_root = dir.string();
    options.generate.http.max_retries = 0;
    options.judge_backend = "host";
    options.attempts = 5;
    options.budget_usd = 1;
    options.pkbw_program = PKBW_PROGRAM;
    options.judge_arguments = {"--trials", "1", "--m", "64", "--n", "64"};
    testing::internal::CaptureStdout();
    int code = run_agent_command(options);
    std::string printed = testing::internal::GetCapturedStdout();
    EXPECT_EQ(code, 0) << printed;
    std::cout << printed;

    Store store = Store::open_read_only(dir / "runs.db");
    auto generations = list_generations(store);
    ASSERT_EQ(generations.size(), 1u);
    EXPECT_EQ(generations[0].backend, "cuda");
    EXPECT_EQ(generations[0].status, "done");
    EXPECT_EQ(json::parse(generations[0].settings).value("judge_backend", ""), "host");
    auto attempts = agent_attempts(store, generations[0].id);
    ASSERT_EQ(attempts.size(), 3u) << printed;
    EXPECT_EQ(attempts[0].verdict, "mismatch");
    EXPECT_EQ(attempts[1].verdict, "crash");
    EXPECT_EQ(attempts[2].verdict, "pass");
    EXPECT_EQ(attempts[2].parent_attempt, 2);
    for (const auto& a : attempts) {
        ASSERT_TRUE(a.run_id.has_value()) << a.attempt;
        auto run = store.get_run(*a.run_id);
        ASSERT_TRUE(run.has_value());
        EXPECT_EQ(std::string(to_string(run->status)), a.verdict);
        EXPECT_EQ(agent_attempt_for_run(store, *a.run_id)->attempt, a.attempt);
    }
    EXPECT_EQ(attempts[2].source, kPkbRight);

    auto received = server.received();
    ASSERT_EQ(received.size(), 3u);
    // The prompt is the checkout's: its system message, its components and the reference's source.
    json first = json::parse(received[0].body);
    EXPECT_EQ(first["messages"][0]["content"], "You write PKB solutions (test system message).");
    std::string prompt = first["messages"][1]["content"];
    EXPECT_NE(prompt.find("Write a CUDA solution for this task."), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("dist.all_reduce(out)"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("Precision: FP32."), std::string::npos) << prompt;
    // What the model was told: the mismatch statistics, then the candidate's exception.
    std::string feedback1 = json::parse(received[1].body)["messages"].back()["content"];
    EXPECT_NE(feedback1.find("elements outside tolerance"), std::string::npos) << feedback1;
    std::string feedback2 = json::parse(received[2].body)["messages"].back()["content"];
    EXPECT_NE(feedback2.find("fused_allreduce_kernel"), std::string::npos) << feedback2;
    EXPECT_NE(printed.find("k=3: correct 1, fast1 0"), std::string::npos) << printed;
    // PKB's file name: solutions_<backend>_<precision>_<hw>_<provider>_<model>/<stem>_<backend>.py.
    EXPECT_EQ(read_file(dir / "solutions_cuda_fp32_none_local_scripted-test-model/1_allreduce_cuda.py"),
              kPkbRight);
    ::unsetenv("PKBW_CACHE_DIR"); // it is removed with the folder
    fs::remove_all(dir);
}

// PKB's backends need a checkout; the error says how to give one, before any request is sent.
TEST(Agent, PkbBackendWithoutACheckoutIsRefused) {
    const char* saved = std::getenv("PKB_CHECKOUT");
    std::string kept = saved ? saved : "";
    ::unsetenv("PKB_CHECKOUT");
    FakeProvider server;
    AgentOptions options;
    options.generate.prompt.problem = "1";
    options.generate.prompt.backend = "triton";
    options.generate.prompt.model = "local/scripted-test-model";
    options.generate.base_url = server.base_url();
    options.generate.prompt.store =
        (fs::temp_directory_path() / ("pkbw_agent_refused_" + std::to_string(::getpid()) + ".db")).string();
    testing::internal::CaptureStderr();
    int code = run_agent_command(options);
    std::string err = testing::internal::GetCapturedStderr();
    if (saved)
        ::setenv("PKB_CHECKOUT", kept.c_str(), 1);
    EXPECT_EQ(code, 2);
    EXPECT_NE(err.find("--backend triton is one of PKB's: pass --pkb-checkout DIR"), std::string::npos)
        << err;
    EXPECT_TRUE(server.received().empty());
    EXPECT_FALSE(fs::exists(*options.generate.prompt.store));
}
