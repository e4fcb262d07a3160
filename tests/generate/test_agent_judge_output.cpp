// The agent reads its judge's whole output, whatever its size. A passing eval used to be lost
// (`judge_failed`, no run_finished line) once the judge's --json passed 4 MiB: every rank_result and
// run_finished carried a 256x256 error map, 5.26 MB at W=2 with 5 trials. Here a scripted model (its
// replies written for this test) answers with a wrong host candidate, then the right one; the judge
// runs problem 1 at its default size (1024x1024) with the default trials (5) at W=2 and W=8, with the
// compact --json and with the error maps asked for (--json-maps: over 20 MB at W=8), and attempt 2 must
// pass. The judge's progress (a line per trial) reaches the agent's stderr as it comes.
#include "agent_command.h"
#include "fake_provider.h"
#include "judge_reader.h"
#include "pkbw/core/generation_store.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

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

struct Case {
    int world_size;
    bool maps; // --json-maps: the judge's output keeps every error map
};

void PrintTo(const Case& c, std::ostream* out) {
    *out << "W=" << c.world_size << (c.maps ? " --json-maps" : "");
}

class AgentJudgeOutput : public ::testing::TestWithParam<Case> {};

} // namespace

TEST_P(AgentJudgeOutput, PassesOnTheSecondAttemptWithFiveTrials) {
    const Case c = GetParam();
    const fs::path dir = fs::temp_directory_path() / ("pkbw_agent_out_" + std::to_string(::getpid()) + "_w" +
                                                      std::to_string(c.world_size) + (c.maps ? "_maps" : ""));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string right =
        read_file(fs::path(PKBW_TEST_SOURCE_ROOT) /
                  "samples/solutions_host_f32_none_samples_baseline/1_allreduce_host.cpp");
    FakeProvider server;
    server.push({200, chat_reply("Skip the peers.\n```cpp\n" + kWrong + "```\n")});
    server.push({200, chat_reply("Sum every peer's buffer.\n```cpp\n" + right + "```\n")});

    AgentOptions options;
    options.generate.prompt.problem = "1";
    options.generate.prompt.backend = "host";
    options.generate.prompt.precision = "fp32";
    options.generate.prompt.nproc = c.world_size;
    options.generate.prompt.model = "local/scripted-test-model";
    options.generate.prompt.store = (dir / "runs.db").string();
    options.generate.base_url = server.base_url();
    options.generate.output_root = dir.string();
    options.generate.http.max_retries = 0;
    options.attempts = 3;
    options.budget_usd = 1;
    options.pkbw_program = PKBW_PROGRAM;
    if (c.maps)
        options.judge_arguments.push_back("--json-maps"); // and no --trials: the judge's default, 5
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    const int code = run_agent_command(options);
    const std::string printed = testing::internal::GetCapturedStdout();
    const std::string progress = testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 0) << printed;

    const Store store = Store::open_read_only(dir / "runs.db");
    const auto generations = list_generations(store);
    ASSERT_EQ(generations.size(), 1u);
    EXPECT_EQ(generations[0].status, "done");
    const auto attempts = agent_attempts(store, generations[0].id);
    ASSERT_EQ(attempts.size(), 2u) << printed;
    EXPECT_EQ(attempts[0].verdict, "mismatch") << printed;
    EXPECT_EQ(attempts[1].verdict, "pass") << printed;
    ASSERT_TRUE(attempts[1].run_id.has_value());
    const auto run = store.get_run(*attempts[1].run_id);
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->status, RunStatus::Pass);
    EXPECT_EQ(run->world_size, c.world_size);
    EXPECT_EQ(run->trials, 5);
    EXPECT_EQ(store.rank_results(run->id).size(), static_cast<std::size_t>(5 * c.world_size));
    // The store keeps the error maps, whatever --json printed.
    const auto tensors = store.tensor_results(run->id, true);
    ASSERT_EQ(tensors.size(), static_cast<std::size_t>(5 * c.world_size));
    for (const auto& t : tensors) {
        EXPECT_EQ(t.error_map.rows, 256);
        EXPECT_EQ(t.error_map.cols, 256);
        EXPECT_EQ(t.error_map.ratio.size(), 256u * 256u);
    }
    EXPECT_NE(printed.find("k=2: correct 1"), std::string::npos) << printed;
    EXPECT_NE(printed.find("attempt 2: pass"), std::string::npos) << printed;
    for (const char* line :
         {"attempt 1/3: asking local/scripted-test-model", "attempt 1: judging with pkbw eval",
          "attempt 1: trial 1/5 mismatch", "attempt 2: trial 1/5 match", "attempt 2: trial 5/5 match"})
        EXPECT_NE(progress.find(line), std::string::npos) << line << "\n" << progress;
    fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, AgentJudgeOutput,
                         ::testing::Values(Case{2, false}, Case{8, false}, Case{8, true}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                             return "W" + std::to_string(info.param.world_size) +
                                    (info.param.maps ? "_with_error_maps" : "_compact");
                         });

// The reader on its own: lines cut anywhere between feeds, one line far above any buffer size, text
// around the JSON; the verdict comes from run_finished.
TEST(JudgeOutputReader, ReadsLinesCutAnywhereAndOfAnySize) {
    json big = {{"event", "rank_result"}, {"rank", 0}, {"tensors", json::array()}};
    big["tensors"].push_back(
        {{"name", "output"}, {"error_map", {{"ratio", std::vector<double>(3000000, 0.0)}}}});
    const std::string output = "pkbw: a note on stderr\n" +
                               json{{"event", "run_started"}, {"run_id", 7}}.dump() + "\n" + big.dump() +
                               "\n" +
                               json{{"event", "run_finished"},
                                    {"run_id", 7},
                                    {"status", "pass"},
                                    {"message", "5 trial(s) match"},
                                    {"trials", json::array()}}
                                   .dump();
    ASSERT_GT(output.size(), 8u << 20);
    for (std::size_t piece : {std::size_t{1} << 20, std::size_t{4093}, output.size()}) {
        JudgeOutputReader reader;
        for (std::size_t at = 0; at < output.size(); at += piece)
            reader.feed(std::string_view(output).substr(at, piece));
        reader.finish(); // the last line has no newline
        const Verdict v = reader.verdict("");
        EXPECT_EQ(v.status, "pass") << piece;
        EXPECT_EQ(v.run_id, 7) << piece;
        EXPECT_EQ(reader.bytes_read(), output.size());
    }
    JudgeOutputReader cut;
    cut.feed(output.substr(0, 5u << 20)); // no run_finished: judge_failed, with the output's end
    cut.finish();
    const Verdict failed = cut.verdict("");
    EXPECT_EQ(failed.status, "judge_failed");
    EXPECT_LE(failed.feedback.size(), 2200u);
}

// A run whose timing is not trusted (perf.withheld, docs/cli.md "Stored timing") gives the model and the
// trajectory why, never its figures as a speedup; a clean perf run gives both.
TEST(JudgeOutputReader, AnUntrustedRunsSpeedupIsWithheldFromTheModel) {
    const auto read = [](const json& perf, const char* status) {
        JudgeOutputReader reader;
        reader.feed(
            json{{"event", "run_finished"}, {"run_id", 3}, {"status", status}, {"perf", perf}}.dump() + "\n");
        return reader.verdict("");
    };
    json perf = {
        {"pkbw", {{"speedup", 19408.5}, {"ci_low", 9049.4}, {"ci_high", 20813.1}, {"verdict", "faster"}}},
        {"withheld", "timing not trusted (invalid_timing)"}};
    const Verdict untrusted = read(perf, "invalid_timing");
    EXPECT_FALSE(untrusted.speedup.has_value());
    EXPECT_NE(untrusted.feedback.find("Perf: speedup withheld: timing not trusted (invalid_timing)"),
              std::string::npos)
        << untrusted.feedback;
    EXPECT_EQ(untrusted.feedback.find("19408"), std::string::npos) << untrusted.feedback;
    perf["withheld"] = nullptr; // a result
    const Verdict clean = read(perf, "pass");
    ASSERT_TRUE(clean.speedup.has_value());
    EXPECT_DOUBLE_EQ(*clean.speedup, 19408.5);
    EXPECT_NE(clean.feedback.find("Perf: speedup 1.941e+04x"), std::string::npos) << clean.feedback;
}
// `pkbw agent --json`: JSON lines only on stdout, one object per line with an "event": the start, each
// attempt's progress (asking, judging, the judge's trials as they finish), each attempt's verdict, the end.
TEST(AgentJson, EveryLineIsAnEventInOrder) {
    const fs::path dir = fs::temp_directory_path() / ("pkbw_agent_json_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string right =
        read_file(fs::path(PKBW_TEST_SOURCE_ROOT) /
                  "samples/solutions_host_f32_none_samples_baseline/1_allreduce_host.cpp");
    FakeProvider server;
    server.push({200, chat_reply("```cpp\n" + kWrong + "```\n")});
    server.push({200, chat_reply("```cpp\n" + right + "```\n")});
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
    options.generate.json = true;
    options.attempts = 3;
    options.pkbw_program = PKBW_PROGRAM;
    options.judge_arguments = {"--trials", "2", "--m", "64", "--n", "64"};
    testing::internal::CaptureStdout();
    const int code = run_agent_command(options);
    const std::string printed = testing::internal::GetCapturedStdout();
    EXPECT_EQ(code, 0) << printed;
    std::vector<std::string> events;
    std::istringstream lines(printed);
    for (std::string line; std::getline(lines, line);) {
        const json event = json::parse(line); // throws on anything that is not JSON
        ASSERT_TRUE(event.is_object() && event.contains("event")) << line;
        std::string name = event["event"];
        if (name == "progress")
            name += ":" + event.value("stage", "") +
                    (event.contains("trial") ? std::to_string(event["trial"].get<int>()) : std::string());
        else if (name == "attempt")
            name += ":" + event.value("verdict", "");
        events.push_back(name);
    }
    const std::vector<std::string> expected = {
        "agent_started",         "progress:attempt", "progress:judge", "progress:judge_trial0",
        "attempt:mismatch",      "progress:attempt", "progress:judge", "progress:judge_trial0",
        "progress:judge_trial1", "attempt:pass",     "agent_finished"};
    EXPECT_EQ(events, expected) << printed;
    fs::remove_all(dir);
}
