// Providers against the loopback server (fake_provider.h). Every reply here is synthesised for the
// tests from the providers' documented wire shapes; none was recorded from a live provider.
#include "extract.h"
#include "fake_provider.h"
#include "generate_command.h"
#include "model_client.h"
#include "pkbw/core/error.h"
#include "pkbw/core/generation_store.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace pkbw;
using namespace pkbw::generate;
using nlohmann::json;
using pkbw::test::FakeProvider;
using pkbw::test::ScriptedReply;
namespace fs = std::filesystem;

namespace {

const std::string kKey = "sk-test-not-a-real-key-0123456789";
const std::string kCode = "import torch\n\ndef solution(x):\n    return x * 2\n";
const std::string kReplyText = "Strategy: double it.\n\n```python\n" + kCode + "```\n";

std::string openai_reply(const std::string& text, const std::string& finish = "stop") {
    return json{{"id", "synthesised-for-tests"},
                {"object", "chat.completion"},
                {"choices", json::array({{{"index", 0},
                                          {"message", {{"role", "assistant"}, {"content", text}}},
                                          {"finish_reason", finish}}})},
                {"usage", {{"prompt_tokens", 1000}, {"completion_tokens", 200}}}}
        .dump();
}

class ProviderTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("pkbw_gen_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        store_.emplace(Store::open(dir_ / "runs.db"));
        GenerationRow g;
        g.label = "solutions_cuda_bf16_none_openai_gpt-4.1";
        g.provider = "openai";
        g.model = "gpt-4.1";
        g.wire_format = "openai-chat";
        g.backend = "cuda";
        g.precision = "bf16";
        g.output_dir = dir_.string();
        generation_ = add_generation(*store_, g);
        http_.backoff_seconds = 0.01;
        http_.max_backoff_seconds = 2;
        http_.stall_seconds = 1;
        http_.total_seconds = 20;
        http_.connect_seconds = 2;
        http_.max_retries = 3;
    }
    void TearDown() override {
        store_.reset();
        fs::remove_all(dir_);
    }

    AskResult ask(const std::string& model_text, const std::string& base,
                  const std::string& language = "python", int max_tokens = 4096) {
        ModelSpec model = parse_model_spec(model_text);
        ProviderSettings p{base, max_tokens, false, kKey};
        ModelClient client(model, p, http_, &*store_, generation_);
        return client.ask({"1_allreduce",
                           0,
                           0,
                           "system text",
                           {{"user", "user text"}},
                           language,
                           dir_ / "out" / "1_allreduce_cuda.py"});
    }

    std::string db_bytes() {
        std::string all;
        for (const auto& entry : fs::directory_iterator(dir_))
            if (entry.path().filename().string().starts_with("runs.db")) {
                std::ifstream in(entry.path(), std::ios::binary);
                std::ostringstream s;
                s << in.rdbuf();
                all += s.str();
            }
        return all;
    }

    fs::path dir_;
    std::optional<Store> store_;
    std::int64_t generation_ = 0;
    HttpSettings http_;
};

} // namespace

TEST(Extract, ChoosesTheBlockInTheRequestedLanguage) {
    auto e =
        extract_code("prose\n```cuda\n__global__ void k() {}\n```\ntext\n```python\nx = 1\n```\n", "python");
    EXPECT_EQ(e.status, ExtractStatus::Ok);
    EXPECT_EQ(e.code, "x = 1\n");
    // Two python blocks: the longer (the whole file, not the usage snippet).
    e = extract_code("```python\nsolution(x)\n```\n```python\ndef solution(x):\n    return x\n```\n",
                     "python");
    EXPECT_EQ(e.code, "def solution(x):\n    return x\n");
    EXPECT_EQ(e.note, "2 ```python blocks; took the longest");
    e = extract_code("```\nbare = 1\n```\n", "python");
    EXPECT_EQ(e.code, "bare = 1\n");
    EXPECT_NE(e.note.find("untagged"), std::string::npos);
    EXPECT_EQ(extract_code("no code at all", "python").status, ExtractStatus::NoCode);
    EXPECT_EQ(extract_code("```cuda\nint x;\n```\n", "python").status, ExtractStatus::NoCode);
    EXPECT_EQ(extract_code("```python\ndef f():\n    pass\n", "python").status, ExtractStatus::Unterminated);
    EXPECT_EQ(extract_code("```cpp\nint main();\n```", "cuda").code, "int main();\n");
    EXPECT_EQ(extract_code("use ```python``` fences\n", "python").status, ExtractStatus::NoCode);
}

TEST(Ranges, ExpandProblemRanges) {
    EXPECT_EQ(expand_problem_ranges("1-3"), "[1, 2, 3]");
    EXPECT_EQ(expand_problem_ranges("1,4-5"), "[1, 4, 5]");
    EXPECT_EQ(expand_problem_ranges("all"), "all");
    EXPECT_EQ(expand_problem_ranges("2_allgather"), "2_allgather");
}

TEST_F(ProviderTest, OpenAiChatRequestShapeSavedFileAndRecord) {
    FakeProvider server;
    server.push({200, openai_reply(kReplyText)});
    AskResult r = ask("openai/gpt-4.1", server.base_url());
    EXPECT_EQ(r.outcome, "saved") << r.message;
    auto received = server.received();
    ASSERT_EQ(received.size(), 1u);
    EXPECT_EQ(received[0].path, "/v1/chat/completions");
    EXPECT_EQ(received[0].headers.find("Authorization")->second, "Bearer " + kKey);
    json body = json::parse(received[0].body);
    EXPECT_EQ(body["model"], "gpt-4.1");
    EXPECT_EQ(body["messages"][0]["role"], "system");
    EXPECT_EQ(body["messages"][1]["content"], "user text");
    EXPECT_EQ(body["max_tokens"], 4096);
    std::ifstream in(dir_ / "out" / "1_allreduce_cuda.py");
    std::stringstream file;
    file << in.rdbuf();
    EXPECT_EQ(file.str(), kCode);
    auto rows = generation_exchanges(*store_, generation_);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].outcome, "saved");
    EXPECT_EQ(rows[0].input_tokens, 1000);
    EXPECT_EQ(rows[0].output_tokens, 200);
    ASSERT_TRUE(rows[0].cost_usd.has_value());
    EXPECT_NEAR(*rows[0].cost_usd, (1000 * 2.0 + 200 * 8.0) / 1e6, 1e-12);
    EXPECT_EQ(rows[0].user_prompt, "user text");
    EXPECT_EQ(rows[0].reply_text, kReplyText);
    EXPECT_GT(*rows[0].latency_ms, 0);
    EXPECT_EQ(rows[0].solution_path, (dir_ / "out" / "1_allreduce_cuda.py").string());
    store_.reset(); // close, so the WAL is checkpointed into the file we read
    EXPECT_EQ(db_bytes().find(kKey), std::string::npos) << "the API key reached the store";
    store_.emplace(Store::open(dir_ / "runs.db"));
}

TEST_F(ProviderTest, OpenAiReasoningModelUsesMaxCompletionTokens) {
    FakeProvider server;
    server.push({200, openai_reply(kReplyText)});
    ask("openai/o3", server.base_url(), "python", 200000);
    json body = json::parse(server.received().at(0).body);
    EXPECT_FALSE(body.contains("max_tokens"));
    EXPECT_EQ(body["max_completion_tokens"], 100000); // clamped to the known cap
}

TEST_F(ProviderTest, AnthropicStreamsLongRequestsAndReadsTheEvents) {
    FakeProvider server;
    // Synthesised SSE in Anthropic's documented event shapes; the text is split mid-word.
    std::string text = kReplyText;
    std::string sse = "event: message_start\ndata: "
                      "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":50}}}\n\n";
    for (std::size_t i = 0; i < text.size(); i += 7)
        sse += "event: content_block_delta\ndata: " +
               json{{"type", "content_block_delta"},
                    {"index", 0},
                    {"delta", {{"type", "text_delta"}, {"text", text.substr(i, 7)}}}}
                   .dump() +
               "\n\n";
    sse += "event: message_delta\ndata: "
           "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_"
           "tokens\":77}}\n\n";
    sse += "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    server.push({200, sse, "text/event-stream"});
    AskResult r = ask("anthropic/claude-sonnet-4-20250514", server.base_url(), "python", 64000);
    EXPECT_EQ(r.outcome, "saved") << r.message;
    auto req = server.received().at(0);
    EXPECT_EQ(req.path, "/v1/messages");
    EXPECT_EQ(req.headers.find("x-api-key")->second, kKey);
    EXPECT_EQ(req.headers.find("anthropic-version")->second, "2023-06-01");
    json body = json::parse(req.body);
    EXPECT_EQ(body["stream"], true);
    EXPECT_EQ(body["system"], "system text");
    EXPECT_EQ(body["max_tokens"], 64000);
    auto rows = generation_exchanges(*store_, generation_);
    EXPECT_EQ(rows.at(0).input_tokens, 50);
    EXPECT_EQ(rows.at(0).output_tokens, 77);
    EXPECT_TRUE(rows.at(0).streamed);
    EXPECT_EQ(rows.at(0).finish_reason, "end_turn");
}

TEST_F(ProviderTest, AnthropicStreamCutBeforeMessageStopIsRetried) {
    FakeProvider server;
    server.push({200,
                 "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{}}}\n\n",
                 "text/event-stream"});
    std::string whole =
        "event: content_block_delta\ndata: " +
        json{{"type", "content_block_delta"}, {"delta", {{"type", "text_delta"}, {"text", kReplyText}}}}
            .dump() +
        "\n\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\ndata: "
        "{\"type\":\"message_stop\"}\n\n";
    server.push({200, whole, "text/event-stream"});
    AskResult r = ask("anthropic/claude-sonnet-4-20250514", server.base_url(), "python", 64000);
    EXPECT_EQ(r.outcome, "saved") << r.message;
    EXPECT_EQ(r.tries, 2);
}

TEST_F(ProviderTest, GeminiRequestAndTokenLimitStop) {
    FakeProvider server;
    json reply{
        {"candidates",
         json::array({{{"content",
                        {{"role", "model"},
                         {"parts", json::array({{{"text", "```python\ndef solution(x):\n    return"}}})}}},
                       {"finishReason", "MAX_TOKENS"}}})},
        {"usageMetadata", {{"promptTokenCount", 10}, {"candidatesTokenCount", 4096}}}};
    server.push({200, reply.dump()});
    AskResult r = ask("google/gemini-3-flash-preview", server.base_url("/v1beta"));
    EXPECT_EQ(r.outcome, "truncated");
    EXPECT_FALSE(fs::exists(dir_ / "out" / "1_allreduce_cuda.py")) << "a cut reply was saved";
    auto req = server.received().at(0);
    EXPECT_EQ(req.path, "/v1beta/models/gemini-3-flash-preview:generateContent");
    EXPECT_EQ(req.headers.find("x-goog-api-key")->second, kKey);
    json body = json::parse(req.body);
    EXPECT_EQ(body["systemInstruction"]["parts"][0]["text"], "system text");
    EXPECT_EQ(body["generationConfig"]["maxOutputTokens"], 4096);
    EXPECT_EQ(generation_exchanges(*store_, generation_).at(0).finish_reason, "MAX_TOKENS");
}

TEST_F(ProviderTest, OpenAiReplyCutAtTheTokenLimitIsRecordedNotSaved) {
    FakeProvider server;
    server.push({200, openai_reply("```python\ndef solution(x):\n", "length")});
    AskResult r = ask("openai/gpt-4.1", server.base_url());
    EXPECT_EQ(r.outcome, "truncated");
    EXPECT_FALSE(fs::exists(dir_ / "out" / "1_allreduce_cuda.py"));
    auto rows = generation_exchanges(*store_, generation_);
    EXPECT_EQ(rows.at(0).outcome, "truncated");
    EXPECT_EQ(rows.at(0).reply_text, "```python\ndef solution(x):\n");
}

TEST_F(ProviderTest, TooManyRequestsHonoursRetryAfter) {
    FakeProvider server;
    server.push({429,
                 "{\"error\":{\"message\":\"rate limited (test)\"}}",
                 "application/json",
                 {{"Retry-After", "1"}}});
    server.push({200, openai_reply(kReplyText)});
    auto start = std::chrono::steady_clock::now();
    AskResult r = ask("openai/gpt-4.1", server.base_url());
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.outcome, "saved");
    EXPECT_EQ(r.tries, 2);
    EXPECT_GE(waited, 0.95) << "Retry-After: 1 was not honoured (backoff alone is 0.01 s)";
    auto rows = generation_exchanges(*store_, generation_);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].outcome, "retry");
    EXPECT_EQ(rows[0].http_status, 429);
    EXPECT_EQ(rows[1].outcome, "saved");
    EXPECT_EQ(rows[1].try_number, 1);
}

TEST_F(ProviderTest, ServerErrorIsRetriedAndClientErrorIsNot) {
    FakeProvider server;
    server.push({500, "{\"error\":{\"message\":\"internal (test)\"}}"});
    server.push({200, openai_reply(kReplyText)});
    EXPECT_EQ(ask("openai/gpt-4.1", server.base_url()).outcome, "saved");
    server.push({400, "{\"error\":{\"message\":\"max_tokens is too large (test)\"}}"});
    AskResult r = ask("openai/gpt-4.1", server.base_url());
    EXPECT_EQ(r.outcome, "http_error");
    EXPECT_EQ(r.tries, 1);
    EXPECT_NE(r.message.find("max_tokens is too large"), std::string::npos);
}

TEST_F(ProviderTest, RetriesEndAfterTheLimit) {
    FakeProvider server;
    for (int i = 0; i < 4; ++i)
        server.push({503, "{}"});
    AskResult r = ask("openai/gpt-4.1", server.base_url());
    EXPECT_EQ(r.outcome, "http_error");
    EXPECT_EQ(r.tries, 4); // the first and max_retries = 3
    EXPECT_EQ(server.received().size(), 4u);
}

TEST_F(ProviderTest, StalledConnectionIsBoundedByTheClientTimeout) {
    FakeProvider server;
    ScriptedReply stall{200, openai_reply(kReplyText)};
    stall.fault = ScriptedReply::Fault::Stall;
    stall.stall_seconds = 3;
    server.push(stall);
    server.push({200, openai_reply(kReplyText)});
    auto start = std::chrono::steady_clock::now();
    AskResult r = ask("openai/gpt-4.1", server.base_url());
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.outcome, "saved");
    EXPECT_EQ(r.tries, 2);
    EXPECT_LT(took, 2.5) << "the stalled try was not cut at the 1 s stall timeout";
    auto rows = generation_exchanges(*store_, generation_);
    EXPECT_EQ(rows.at(0).outcome, "retry");
    EXPECT_NE(rows.at(0).message.find("imeout"), std::string::npos) << rows.at(0).message;
}

TEST_F(ProviderTest, TruncatedBodyIsRetried) {
    FakeProvider server;
    ScriptedReply cut{200, openai_reply(kReplyText)};
    cut.fault = ScriptedReply::Fault::CutShort;
    server.push(cut);
    server.push({200, openai_reply(kReplyText)});
    AskResult r = ask("openai/gpt-4.1", server.base_url());
    EXPECT_EQ(r.outcome, "saved") << r.message;
    EXPECT_EQ(r.tries, 2);
}

TEST_F(ProviderTest, ReplyWithoutCodeIsAnErrorAndTheReplyIsKept) {
    FakeProvider server;
    server.push({200, openai_reply("I would use a ring all-reduce here.")});
    AskResult r = ask("openai/gpt-4.1", server.base_url());
    EXPECT_EQ(r.outcome, "no_code");
    EXPECT_FALSE(fs::exists(dir_ / "out" / "1_allreduce_cuda.py"));
    EXPECT_EQ(generation_exchanges(*store_, generation_).at(0).reply_text,
              "I would use a ring all-reduce here.");
}

TEST_F(ProviderTest, ReplyWithTwoBlocksKeepsThePythonFile) {
    FakeProvider server;
    server.push(
        {200, openai_reply("```cuda\n__global__ void k() {}\n```\nthen\n```python\n" + kCode + "```\n")});
    AskResult r = ask("openai/gpt-4.1", server.base_url());
    EXPECT_EQ(r.outcome, "saved");
    EXPECT_EQ(r.code, kCode);
}

TEST(ProviderKeys, MissingKeyNamesTheVariable) {
    ::unsetenv("ANTHROPIC_API_KEY");
    try {
        key_from_environment(parse_model_spec("anthropic/claude-opus-4-20250514"), true);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("ANTHROPIC_API_KEY"), std::string::npos);
    }
    EXPECT_FALSE(key_from_environment(parse_model_spec("local/qwen"), true).has_value());
    EXPECT_THROW(parse_model_spec("nobody/model"), Error);
    EXPECT_THROW(parse_model_spec("gpt-4o"), Error);
    EXPECT_EQ(parse_model_spec("together/zai-org/GLM-5.1").model, "zai-org/GLM-5.1");
}
