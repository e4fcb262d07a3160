// Generations in the run store (schema 4, resources/schema/004_generations.sql; docs/generate.md):
// a `pkbw generate` / `pkbw agent` invocation, every HTTP exchange it made, and the agent's attempts.
// Like the trace tables these use a connection of their own on store.path(); do not call them while
// a Store::Transaction is open on the same store.
#pragma once

#include "pkbw/core/store.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pkbw {

struct GenerationRow {
    std::int64_t id = 0;
    std::string kind = "generate"; // generate | agent
    std::string label, provider, model, wire_format, base_url, backend, precision, hardware, output_dir;
    std::string settings = "{}";
    std::string command_line = "[]";
    std::string started_at, ended_at;
    std::string status = "running";
};

struct ExchangeRow {
    std::int64_t id = 0;
    std::int64_t generation_id = 0;
    std::string problem_stem;
    int sample = 0;
    int attempt = 0;
    int try_number = 0;
    std::string url;
    bool streamed = false;
    std::string system_prompt, user_prompt, request_body;
    std::optional<int> http_status;
    std::string reply_body, reply_text, finish_reason;
    std::string outcome; // saved | truncated | no_code | empty | refused | http_error | retry
    std::string message;
    std::optional<std::int64_t> input_tokens, output_tokens;
    std::optional<double> latency_ms, cost_usd;
    std::string solution_path, solution_sha256;
    std::string started_at;
};

struct AgentAttemptRow {
    std::int64_t generation_id = 0;
    std::string problem_stem;
    int attempt = 1;
    std::optional<int> parent_attempt;
    std::optional<std::int64_t> exchange_id, run_id;
    std::string verdict;
    std::optional<double> speedup;
    bool fast = false;
    std::string feedback, source;
    std::optional<double> cost_usd;
};

// Each write is its own transaction. Throw StoreError naming the store (read-only, schema < 3).
std::int64_t add_generation(Store& store, const GenerationRow& row);
void finish_generation(Store& store, std::int64_t generation_id, const std::string& status);
std::int64_t add_exchange(Store& store, const ExchangeRow& row);
void add_agent_attempt(Store& store, const AgentAttemptRow& row);

std::optional<GenerationRow> get_generation(const Store& store, std::int64_t generation_id);
std::vector<GenerationRow> list_generations(const Store& store, int limit = 50);
std::vector<ExchangeRow> generation_exchanges(const Store& store, std::int64_t generation_id); // by id
std::vector<AgentAttemptRow> agent_attempts(const Store& store,
                                            std::int64_t generation_id); // by stem, attempt
// The attempt a run judged, if it was one.
std::optional<AgentAttemptRow> agent_attempt_for_run(const Store& store, std::int64_t run_id);

} // namespace pkbw
