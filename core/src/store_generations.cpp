// Generation tables of the run store (schema 4). A connection of its own, as for the traces.
#include "pkbw/core/generation_store.h"
#include "store_db.h"

namespace pkbw {
namespace {

constexpr int kGenerationSchemaVersion = 4;

// The generation tables' connection (store_db.h).
class Connection : public detail::TableConnection {
public:
    Connection(const Store& store, bool write)
        : TableConnection(store, write, kGenerationSchemaVersion, "generation",
                          "cannot record generations in a store opened read-only") {}
};

GenerationRow read_generation(const detail::Stmt& s) {
    GenerationRow g;
    int c = 0;
    g.id = s.i64(c++);
    g.kind = s.text(c++);
    g.label = s.text(c++);
    g.provider = s.text(c++);
    g.model = s.text(c++);
    g.wire_format = s.text(c++);
    g.base_url = s.text(c++);
    g.backend = s.text(c++);
    g.precision = s.text(c++);
    g.hardware = s.text(c++);
    g.output_dir = s.text(c++);
    g.settings = s.text(c++);
    g.command_line = s.text(c++);
    g.started_at = s.text(c++);
    g.ended_at = s.is_null(c) ? "" : s.text(c);
    ++c;
    g.status = s.text(c++);
    return g;
}

constexpr const char* kGenerationColumns =
    "id, kind, label, provider, model, wire_format, base_url, backend, precision, hardware, output_dir, "
    "settings, command_line, started_at, ended_at, status";

AgentAttemptRow read_attempt(const detail::Stmt& s) {
    AgentAttemptRow a;
    int c = 0;
    a.generation_id = s.i64(c++);
    a.problem_stem = s.text(c++);
    a.attempt = s.i32(c++);
    if (auto p = s.opt_i64(c++))
        a.parent_attempt = static_cast<int>(*p);
    a.exchange_id = s.opt_i64(c++);
    a.run_id = s.opt_i64(c++);
    a.verdict = s.text(c++);
    a.speedup = s.opt_real(c++);
    a.fast = s.i64(c++) != 0;
    a.feedback = s.text(c++);
    a.source = s.text(c++);
    a.cost_usd = s.opt_real(c++);
    return a;
}

constexpr const char* kAttemptColumns = "generation_id, problem_stem, attempt, parent_attempt, exchange_id, "
                                        "run_id, verdict, speedup, fast, feedback, source, cost_usd";

} // namespace

std::int64_t add_generation(Store& store, const GenerationRow& g) {
    Connection c(store, true);
    auto s =
        c.prepare("INSERT INTO generations (kind, label, provider, model, wire_format, base_url, backend, "
                  "precision, hardware, output_dir, settings, command_line, started_at, status) VALUES "
                  "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
    s.bind(1, g.kind).bind(2, g.label).bind(3, g.provider).bind(4, g.model).bind(5, g.wire_format);
    s.bind(6, g.base_url).bind(7, g.backend).bind(8, g.precision).bind(9, g.hardware).bind(10, g.output_dir);
    s.bind(11, g.settings).bind(12, g.command_line);
    s.bind(13, g.started_at.empty() ? utc_now_iso8601() : g.started_at).bind(14, g.status);
    s.run();
    return c.last_id();
}

void finish_generation(Store& store, std::int64_t generation_id, const std::string& status) {
    Connection c(store, true);
    auto s = c.prepare("UPDATE generations SET status = ?1, ended_at = ?2 WHERE id = ?3");
    s.bind(1, status).bind(2, utc_now_iso8601()).bind(3, generation_id);
    s.run();
}

std::int64_t add_exchange(Store& store, const ExchangeRow& e) {
    Connection c(store, true);
    auto s = c.prepare(
        "INSERT INTO generation_exchanges (generation_id, problem_stem, sample, attempt, try_number, url, "
        "streamed, system_prompt, user_prompt, request_body, http_status, reply_body, reply_text, "
        "finish_reason, outcome, message, input_tokens, output_tokens, latency_ms, cost_usd, solution_path, "
        "solution_sha256, started_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
        "?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)");
    s.bind(1, e.generation_id).bind(2, e.problem_stem).bind(3, e.sample).bind(4, e.attempt);
    s.bind(5, e.try_number)
        .bind(6, e.url)
        .bind(7, e.streamed)
        .bind(8, e.system_prompt)
        .bind(9, e.user_prompt);
    s.bind(10, e.request_body).bind(11, e.http_status).bind(12, e.reply_body).bind(13, e.reply_text);
    s.bind(14, e.finish_reason).bind(15, e.outcome).bind(16, e.message).bind(17, e.input_tokens);
    s.bind(18, e.output_tokens).bind(19, e.latency_ms).bind(20, e.cost_usd).bind(21, e.solution_path);
    s.bind(22, e.solution_sha256).bind(23, e.started_at.empty() ? utc_now_iso8601() : e.started_at);
    s.run();
    return c.last_id();
}

void add_agent_attempt(Store& store, const AgentAttemptRow& a) {
    Connection c(store, true);
    auto s = c.prepare(std::string("INSERT OR REPLACE INTO agent_attempts (") + kAttemptColumns +
                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
    s.bind(1, a.generation_id).bind(2, a.problem_stem).bind(3, a.attempt);
    s.bind(4, a.parent_attempt ? std::optional<std::int64_t>(*a.parent_attempt) : std::nullopt);
    s.bind(5, a.exchange_id).bind(6, a.run_id).bind(7, a.verdict).bind(8, a.speedup).bind(9, a.fast);
    s.bind(10, a.feedback).bind(11, a.source).bind(12, a.cost_usd);
    s.run();
}

std::optional<GenerationRow> get_generation(const Store& store, std::int64_t generation_id) {
    Connection c(store, false);
    auto s = c.prepare(std::string("SELECT ") + kGenerationColumns + " FROM generations WHERE id = ?1");
    s.bind(1, generation_id);
    if (!s.step())
        return std::nullopt;
    return read_generation(s);
}

std::vector<GenerationRow> list_generations(const Store& store, int limit) {
    Connection c(store, false);
    auto s = c.prepare(std::string("SELECT ") + kGenerationColumns +
                       " FROM generations ORDER BY started_at DESC, id DESC LIMIT ?1");
    s.bind(1, limit);
    std::vector<GenerationRow> rows;
    while (s.step())
        rows.push_back(read_generation(s));
    return rows;
}

std::vector<ExchangeRow> generation_exchanges(const Store& store, std::int64_t generation_id) {
    Connection c(store, false);
    auto s = c.prepare(
        "SELECT id, generation_id, problem_stem, sample, attempt, try_number, url, streamed, system_prompt, "
        "user_prompt, request_body, http_status, reply_body, reply_text, finish_reason, outcome, message, "
        "input_tokens, output_tokens, latency_ms, cost_usd, solution_path, solution_sha256, started_at FROM "
        "generation_exchanges WHERE generation_id = ?1 ORDER BY id");
    s.bind(1, generation_id);
    std::vector<ExchangeRow> rows;
    while (s.step()) {
        ExchangeRow e;
        int k = 0;
        e.id = s.i64(k++);
        e.generation_id = s.i64(k++);
        e.problem_stem = s.text(k++);
        e.sample = s.i32(k++);
        e.attempt = s.i32(k++);
        e.try_number = s.i32(k++);
        e.url = s.text(k++);
        e.streamed = s.i64(k++) != 0;
        e.system_prompt = s.text(k++);
        e.user_prompt = s.text(k++);
        e.request_body = s.text(k++);
        if (auto st = s.opt_i64(k++))
            e.http_status = static_cast<int>(*st);
        e.reply_body = s.text(k++);
        e.reply_text = s.text(k++);
        e.finish_reason = s.text(k++);
        e.outcome = s.text(k++);
        e.message = s.text(k++);
        e.input_tokens = s.opt_i64(k++);
        e.output_tokens = s.opt_i64(k++);
        e.latency_ms = s.opt_real(k++);
        e.cost_usd = s.opt_real(k++);
        e.solution_path = s.text(k++);
        e.solution_sha256 = s.text(k++);
        e.started_at = s.text(k++);
        rows.push_back(std::move(e));
    }
    return rows;
}

std::vector<AgentAttemptRow> agent_attempts(const Store& store, std::int64_t generation_id) {
    Connection c(store, false);
    auto s = c.prepare(std::string("SELECT ") + kAttemptColumns +
                       " FROM agent_attempts WHERE generation_id = ?1 ORDER BY problem_stem, attempt");
    s.bind(1, generation_id);
    std::vector<AgentAttemptRow> rows;
    while (s.step())
        rows.push_back(read_attempt(s));
    return rows;
}

std::optional<AgentAttemptRow> agent_attempt_for_run(const Store& store, std::int64_t run_id) {
    if (store.schema_version() < kGenerationSchemaVersion)
        return std::nullopt;
    Connection c(store, false);
    auto s = c.prepare(std::string("SELECT ") + kAttemptColumns + " FROM agent_attempts WHERE run_id = ?1");
    s.bind(1, run_id);
    if (!s.step())
        return std::nullopt;
    return read_attempt(s);
}

} // namespace pkbw
