// TEMPORARY: stand-ins for core pieces other components are writing (protocol.cpp, sha256.cpp), so
// the driver builds and its tests run before they land on main. Built only while core lacks them
// (engine/cli/CMakeLists.txt); deleted once main has them.
#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"

#include <cstring>

namespace pkbw {
namespace protocol {

Message parse_line(std::string_view line, const std::string& source) {
    if (line.size() > kMaxLineBytes)
        throw FormatError(source + ": line too long");
    nlohmann::json body = nlohmann::json::parse(line, nullptr, false);
    if (body.is_discarded() || !body.is_object())
        throw FormatError(source + ": not a JSON object");
    if (!body.contains("event") || !body["event"].is_string())
        throw FormatError(source + ": field 'event' missing or not a string");
    return Message{body["event"].get<std::string>(), body};
}

std::string to_line(const nlohmann::json& body) {
    return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

nlohmann::json to_json(const TensorComparison& c, bool) {
    return {{"name", c.name},
            {"pass", c.pass},
            {"shape_match", c.shape_match},
            {"numel", c.numel},
            {"mismatch_count", c.mismatch_count},
            {"max_abs_error", c.max_abs_error},
            {"max_rel_error", c.max_rel_error},
            {"message", c.message}};
}

TensorComparison tensor_comparison_from_json(const nlohmann::json& json, const std::string& source) {
    if (!json.is_object() || !json.contains("name"))
        throw FormatError(source + ": tensor comparison without 'name'");
    TensorComparison c;
    c.name = json.value("name", "");
    c.pass = json.value("pass", false);
    c.shape_match = json.value("shape_match", false);
    c.numel = json.value("numel", std::int64_t{0});
    c.mismatch_count = json.value("mismatch_count", std::int64_t{0});
    c.max_abs_error = json.value("max_abs_error", 0.0);
    c.max_rel_error = json.value("max_rel_error", 0.0);
    c.message = json.value("message", "");
    return c;
}

} // namespace protocol
} // namespace pkbw
