#include "model_client.h"

#include "pkbw/core/error.h"
#include "pkbw/core/generation_store.h"
#include "pkbw/core/sha256.h"

#include <cstdlib>
#include <fstream>

namespace pkbw::generate {

namespace fs = std::filesystem;

std::optional<std::string> key_from_environment(const ModelSpec& model, bool required) {
    for (const auto& variable : {model.key_variable, model.key_fallback}) {
        if (variable.empty())
            continue;
        if (const char* value = std::getenv(variable.c_str()); value != nullptr && *value != '\0')
            return std::string(value);
    }
    if (required && !model.key_variable.empty() && model.provider != "local" && model.provider != "vllm")
        throw Error("set " + model.key_variable +
                    (model.key_fallback.empty() ? "" : " or " + model.key_fallback) + " to call " +
                    model.provider + " (keys are read from the environment only)");
    return std::nullopt;
}

ModelClient::ModelClient(ModelSpec model, ProviderSettings provider, HttpSettings http, Store* store,
                         std::int64_t generation_id)
    : model_(std::move(model))
    , provider_(std::move(provider))
    , client_(http)
    , store_(store)
    , generation_id_(generation_id) {}

std::string ModelClient::redact(std::string text) const {
    if (provider_.key && provider_.key->size() >= 4)
        for (std::size_t at; (at = text.find(*provider_.key)) != std::string::npos;)
            text.replace(at, provider_.key->size(), "[redacted]");
    return text;
}

namespace {

void write_solution(const fs::path& file, const std::string& code) {
    fs::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << code;
    out.close();
    if (!out)
        throw Error("cannot write " + file.string());
}

// What a reply that arrived (HTTP 200) comes to: the outcome and its message, and for a complete reply
// with a code block, that code, written to the request's solution path (`path` and `sha` then name it).
void judge_reply(const ModelReply& reply, const AskRequest& request, AskResult& result, std::string& path,
                 std::string& sha) {
    if (!reply.error.empty()) {
        result.outcome = "http_error";
        result.message = "unreadable reply: " + reply.error;
    } else if (reply.refused) {
        result.outcome = "refused";
        result.message = "the provider stopped the reply (" + reply.finish_reason + ")";
    } else if (reply.truncated) {
        result.outcome = "truncated";
        result.message = "the reply stopped at the token limit (" + reply.finish_reason + ", " +
                         std::to_string(reply.output_tokens.value_or(0)) + " output tokens); not saved";
    } else if (reply.text.empty()) {
        result.outcome = "empty";
        result.message = "the reply has no text (finish reason '" + reply.finish_reason + "')";
    } else {
        Extracted code = extract_code(reply.text, request.language);
        if (code.status != ExtractStatus::Ok) {
            result.outcome = "no_code";
            result.message = code.note + "; the reply is kept in the store";
        } else {
            result.outcome = "saved";
            result.code = code.code;
            result.message = code.note;
            if (!request.solution_path.empty()) {
                write_solution(request.solution_path, code.code);
                path = request.solution_path.string();
                sha = sha256_hex(code.code);
            }
        }
    }
}

// The reply's estimated cost from its token counts and the model's price; none when either is unknown.
std::optional<double> reply_cost(const ModelReply& reply,
                                 const std::optional<std::pair<double, double>>& price) {
    if (!price || (!reply.input_tokens && !reply.output_tokens))
        return std::nullopt;
    return (reply.input_tokens.value_or(0) * price->first + reply.output_tokens.value_or(0) * price->second) /
           1e6;
}

} // namespace

AskResult ModelClient::ask(const AskRequest& request) {
    ProviderRequest built = build_request(model_, provider_, request.system, request.turns);
    const std::string user_prompt = request.turns.empty() ? "" : request.turns.back().text;
    AskResult result;
    auto price = price_per_million(model_);

    auto record = [&](int try_number, const HttpResult& http, const ModelReply* reply,
                      const std::string& outcome, const std::string& message, const std::string& path,
                      const std::string& sha) {
        const std::optional<double> cost = reply ? reply_cost(*reply, price) : std::nullopt;
        if (reply)
            result.cost_usd = cost;
        if (store_ == nullptr)
            return std::int64_t{0};
        ExchangeRow row;
        row.generation_id = generation_id_;
        row.problem_stem = request.stem;
        row.sample = request.sample;
        row.attempt = request.attempt;
        row.try_number = try_number;
        row.url = built.http.url;
        row.streamed = built.streamed;
        row.system_prompt = try_number == 0 ? request.system : "";
        row.user_prompt = try_number == 0 ? user_prompt : ""; // the first try holds the prompt
        row.request_body = try_number == 0 ? redact(built.body_for_record) : "(as try 0)";
        if (http.status != 0)
            row.http_status = static_cast<int>(http.status);
        row.reply_body = redact(http.body);
        if (reply) {
            row.reply_text = redact(reply->text);
            row.finish_reason = reply->finish_reason;
            row.input_tokens = reply->input_tokens;
            row.output_tokens = reply->output_tokens;
        }
        row.outcome = outcome;
        row.message = redact(message);
        row.latency_ms = http.latency_ms;
        row.cost_usd = cost;
        row.solution_path = path;
        row.solution_sha256 = sha;
        std::lock_guard lock(store_mutex_);
        return add_exchange(*store_, row);
    };

    auto unreadable = [&](const HttpResult& http) {
        return http.transport_error.empty() && http.status == 200 &&
               !parse_reply(model_, http.body, built.streamed).error.empty();
    };
    HttpResult last = client_.post_with_retries(
        built.http,
        [&](int try_number, const HttpResult& http, bool retrying) {
            result.tries = try_number + 1;
            if (retrying) {
                std::string why = !http.transport_error.empty() ? http.transport_error
                                                                : "HTTP " + std::to_string(http.status);
                if (http.status == 200)
                    why = "HTTP 200 with an unreadable body: " +
                          parse_reply(model_, http.body, built.streamed).error;
                record(try_number, http, nullptr, "retry", why + "; retrying", "", "");
                if (on_retry_)
                    on_retry_(request, try_number, redact(why));
            }
        },
        unreadable);
    const int final_try = result.tries - 1;

    if (!last.transport_error.empty() || last.status != 200) {
        result.outcome = "http_error";
        result.message = !last.transport_error.empty()
                             ? last.transport_error
                             : "HTTP " + std::to_string(last.status) + ": " + last.body.substr(0, 300);
        result.message = redact(result.message) + " (after " + std::to_string(result.tries) + " tries)";
        result.exchange_id = record(final_try, last, nullptr, result.outcome, result.message, "", "");
        return result;
    }
    ModelReply reply = parse_reply(model_, last.body, built.streamed);
    result.reply_text = reply.text;
    std::string path, sha;
    judge_reply(reply, request, result, path, sha);
    result.exchange_id = record(final_try, last, &reply, result.outcome, result.message, path, sha);
    return result;
}

} // namespace pkbw::generate
