#include "pkbw/core/protocol.h"

#include "pkbw/core/error.h"

#include <cmath>
#include <limits>

namespace pkbw::protocol {
namespace {

using nlohmann::json;

// Deepest nesting a line may have; run_finished, the deepest event, needs 9 levels (its error maps).
constexpr int kMaxNesting = 64;

enum class Kind { Integer, Number, String, Boolean, Array, Object };

struct Field {
    const char* name;
    Kind kind;
};

struct EventSchema {
    std::string_view event;
    std::initializer_list<Field> required;
};

const EventSchema kSchemas[] = {
    {kHello, {{"rank", Kind::Integer}, {"world_size", Kind::Integer}, {"pid", Kind::Integer}}},
    {kPhase, {{"rank", Kind::Integer}, {"phase", Kind::String}, {"trial", Kind::Integer}}},
    {kRankResult,
     {{"rank", Kind::Integer}, {"trial", Kind::Integer}, {"status", Kind::String}, {"tensors", Kind::Array}}},
    {kPerfResult, {{"rank", Kind::Integer}}},
    {kPerfProgress, {{"rank", Kind::Integer}, {"block", Kind::Integer}, {"blocks", Kind::Integer}}},
    {kError, {{"kind", Kind::String}, {"message", Kind::String}}},
    {kRankDone, {{"rank", Kind::Integer}}},
    {kCandidate, {{"rank", Kind::Integer}, {"stage", Kind::String}}},
    {kTimingPlan, {{"rank", Kind::Integer}, {"calls_per_block", Kind::Integer}, {"checked", Kind::Boolean}}},
    {kTimedCheck,
     {{"rank", Kind::Integer},
      {"block", Kind::Integer},
      {"calls", Kind::Integer},
      {"failed_calls", Kind::Integer},
      {"status", Kind::String}}},
    {kRunStarted, {{"run_id", Kind::Integer}}},
    {kCompile, {{"side", Kind::String}, {"status", Kind::String}}},
    {kRankExit, {{"rank", Kind::Integer}}},
    {kLog, {{"rank", Kind::Integer}, {"text", Kind::String}}},
    {kRunFinished, {{"run_id", Kind::Integer}, {"status", Kind::String}, {"exit_code", Kind::Integer}}},
};

bool has_kind(const json& value, Kind kind) {
    switch (kind) {
    case Kind::Integer:
        return value.is_number_integer();
    case Kind::Number:
        return value.is_number();
    case Kind::String:
        return value.is_string();
    case Kind::Boolean:
        return value.is_boolean();
    case Kind::Array:
        return value.is_array();
    case Kind::Object:
        return value.is_object();
    }
    return false;
}

const char* kind_name(Kind kind) {
    switch (kind) {
    case Kind::Integer:
        return "an integer";
    case Kind::Number:
        return "a number";
    case Kind::String:
        return "a string";
    case Kind::Boolean:
        return "a boolean";
    case Kind::Array:
        return "an array";
    case Kind::Object:
        return "an object";
    }
    return "?";
}

// JSON has no infinities or NaN: they travel as the strings "inf", "-inf", "nan".
json number(double value) {
    if (std::isnan(value)) {
        return "nan";
    }
    if (std::isinf(value)) {
        return value > 0 ? "inf" : "-inf";
    }
    return value;
}

class Reader {
public:
    Reader(const json& object, const std::string& source)
        : object_(object)
        , source_(source) {}

    const json& at(const char* field) const {
        if (!object_.is_object() || !object_.contains(field)) {
            throw FormatError(source_ + ": missing field '" + field + "'");
        }
        return object_.at(field);
    }
    double real(const char* field) const {
        const json& value = at(field);
        if (value.is_number()) {
            return value.get<double>();
        }
        if (value.is_string()) {
            const auto& text = value.get_ref<const std::string&>();
            if (text == "nan") {
                return std::numeric_limits<double>::quiet_NaN();
            }
            if (text == "inf") {
                return std::numeric_limits<double>::infinity();
            }
            if (text == "-inf") {
                return -std::numeric_limits<double>::infinity();
            }
        }
        throw FormatError(source_ + ": field '" + field + "' is not a number");
    }
    std::int64_t integer(const char* field) const {
        const json& value = at(field);
        if (!value.is_number_integer()) {
            throw FormatError(source_ + ": field '" + field + "' is not an integer");
        }
        // An unsigned above 2^63 - 1 would wrap to a negative count.
        if (value.is_number_unsigned() &&
            value.get<std::uint64_t>() >
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            throw FormatError(source_ + ": field '" + field + "' is out of range");
        }
        return value.get<std::int64_t>();
    }
    bool boolean(const char* field) const {
        const json& value = at(field);
        if (!value.is_boolean()) {
            throw FormatError(source_ + ": field '" + field + "' is not a boolean");
        }
        return value.get<bool>();
    }
    std::string string(const char* field) const {
        const json& value = at(field);
        if (!value.is_string()) {
            throw FormatError(source_ + ": field '" + field + "' is not a string");
        }
        return value.get<std::string>();
    }
    Shape shape(const char* field) const {
        const json& value = at(field);
        Shape shape;
        if (!value.is_array()) {
            throw FormatError(source_ + ": field '" + field + "' is not a list of integers");
        }
        for (const auto& dim : value) {
            if (!dim.is_number_integer() || dim.get<std::int64_t>() < 0) {
                throw FormatError(source_ + ": field '" + field + "' is not a list of non-negative integers");
            }
            shape.push_back(dim.get<std::int64_t>());
        }
        return shape;
    }
    DType dtype(const char* field) const {
        const auto name = string(field);
        const auto dtype = parse_dtype(name);
        if (!dtype) {
            throw FormatError(source_ + ": field '" + field + "' names an unknown dtype '" + name + "'");
        }
        return *dtype;
    }

private:
    const json& object_;
    const std::string& source_;
};

json summary_to_json(const ValueSummary& s) {
    return {{"nan_count", s.nan_count}, {"inf_count", s.inf_count}, {"zero_count", s.zero_count},
            {"min", number(s.min)},     {"max", number(s.max)},     {"mean", number(s.mean)},
            {"all_zero", s.all_zero},   {"constant", s.constant}};
}

ValueSummary summary_from_json(const json& object, const std::string& source) {
    if (!object.is_object()) {
        throw FormatError(source + " is not an object");
    }
    const Reader r(object, source);
    ValueSummary s;
    s.nan_count = r.integer("nan_count");
    s.inf_count = r.integer("inf_count");
    s.zero_count = r.integer("zero_count");
    s.min = r.real("min");
    s.max = r.real("max");
    s.mean = r.real("mean");
    s.all_zero = r.boolean("all_zero");
    s.constant = r.boolean("constant");
    return s;
}

} // namespace

Message parse_line(std::string_view line, const std::string& source) {
    if (line.size() > kMaxLineBytes) {
        throw FormatError(source + ": line of " + std::to_string(line.size()) + " bytes exceeds the limit");
    }
    // Two things JSON allows that the protocol refuses, both checked while parsing: nesting deeper
    // than any event needs (dump() and copies of nlohmann::json recurse, so a deep line would crash
    // whoever forwards it) and a number too large for a double (it would be read as infinity and
    // forwarded as null).
    bool too_deep = false;
    bool out_of_range = false;
    const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
        if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
            depth >= kMaxNesting) {
            too_deep = true;
            return false;
        }
        if (event == json::parse_event_t::value && parsed.is_number_float() &&
            !std::isfinite(parsed.get<double>())) {
            out_of_range = true;
        }
        return true;
    };
    json body = json::parse(line, check, /*allow_exceptions=*/false);
    if (too_deep) {
        throw FormatError(source + ": nesting deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    if (out_of_range) {
        throw FormatError(source + ": a number is out of the range of a double");
    }
    if (body.is_discarded()) {
        throw FormatError(source + ": not valid JSON");
    }
    if (!body.is_object()) {
        throw FormatError(source + ": a protocol line must be a JSON object");
    }
    const auto event = body.find("event");
    if (event == body.end() || !event->is_string()) {
        throw FormatError(source + ": missing string field 'event'");
    }
    Message message{event->get<std::string>(), std::move(body)};
    for (const auto& schema : kSchemas) {
        if (schema.event != message.event) {
            continue;
        }
        for (const auto& field : schema.required) {
            const auto it = message.body.find(field.name);
            if (it == message.body.end()) {
                throw FormatError(source + ": event '" + message.event + "' lacks field '" + field.name +
                                  "'");
            }
            if (!has_kind(*it, field.kind)) {
                throw FormatError(source + ": event '" + message.event + "' field '" + field.name +
                                  "' must be " + kind_name(field.kind));
            }
        }
    }
    return message;
}

std::string to_line(const nlohmann::json& body) {
    // Invalid UTF-8 (a solution's message, say) is replaced, never an exception.
    return body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

nlohmann::json to_json(const TensorComparison& c, bool include_error_map) {
    json j = {
        {"name", c.name},
        {"pass", c.pass},
        {"shape_match", c.shape_match},
        {"ref_shape", c.ref_shape},
        {"cand_shape", c.cand_shape},
        {"ref_dtype", dtype_name(c.ref_dtype)},
        {"cand_dtype", dtype_name(c.cand_dtype)},
        {"dtype_match", c.dtype_match},
        {"numel", c.numel},
        {"mismatch_count", c.mismatch_count},
        {"mismatch_fraction", number(c.mismatch_fraction)},
        {"max_abs_error", number(c.max_abs_error)},
        {"max_rel_error", number(c.max_rel_error)},
        {"worst_ratio", number(c.worst_ratio)},
        {"first_mismatch", c.first_mismatch},
        {"worst_mismatch", c.worst_mismatch},
        {"max_ulp", c.max_ulp ? json(*c.max_ulp) : json(nullptr)},
        {"min_passing_atol", number(c.min_passing_atol)},
        {"ref_summary", summary_to_json(c.ref_summary)},
        {"cand_summary", summary_to_json(c.cand_summary)},
        {"message", c.message},
    };
    if (c.ties) {
        j["ties"] = to_json(*c.ties);
    }
    if (c.length_bound) { // a variable-length output (docs/formats.md "Variable-length outputs")
        j["length_bound"] = *c.length_bound;
        j["ref_length"] = c.ref_length ? json(*c.ref_length) : json(nullptr);
        j["cand_length"] = c.cand_length ? json(*c.cand_length) : json(nullptr);
    }
    if (include_error_map && !c.error_map.ratio.empty()) {
        json ratio = json::array();
        for (float v : c.error_map.ratio) {
            ratio.push_back(number(v));
        }
        j["error_map"] = {{"source_rows", c.error_map.source_rows},
                          {"source_cols", c.error_map.source_cols},
                          {"rows", c.error_map.rows},
                          {"cols", c.error_map.cols},
                          {"ratio", std::move(ratio)}};
    }
    return j;
}

TensorComparison tensor_comparison_from_json(const nlohmann::json& j, const std::string& source) {
    if (!j.is_object()) {
        throw FormatError(source + ": a tensor comparison must be an object");
    }
    const Reader r(j, source);
    TensorComparison c;
    c.name = r.string("name");
    c.pass = r.boolean("pass");
    c.shape_match = r.boolean("shape_match");
    c.ref_shape = r.shape("ref_shape");
    c.cand_shape = r.shape("cand_shape");
    c.ref_dtype = r.dtype("ref_dtype");
    c.cand_dtype = r.dtype("cand_dtype");
    c.dtype_match = r.boolean("dtype_match");
    c.numel = r.integer("numel");
    c.mismatch_count = r.integer("mismatch_count");
    c.mismatch_fraction = r.real("mismatch_fraction");
    c.max_abs_error = r.real("max_abs_error");
    c.max_rel_error = r.real("max_rel_error");
    c.worst_ratio = r.real("worst_ratio");
    c.first_mismatch = r.integer("first_mismatch");
    c.worst_mismatch = r.integer("worst_mismatch");
    const json& ulp = r.at("max_ulp");
    if (ulp.is_number_unsigned()) {
        c.max_ulp = ulp.get<std::uint64_t>();
    } else if (ulp.is_number_integer()) {
        throw FormatError(source + ": field 'max_ulp' is negative");
    } else if (!ulp.is_null()) {
        throw FormatError(source + ": field 'max_ulp' is not an integer or null");
    }
    c.min_passing_atol = r.real("min_passing_atol");
    c.ref_summary = summary_from_json(r.at("ref_summary"), source + " ref_summary");
    c.cand_summary = summary_from_json(r.at("cand_summary"), source + " cand_summary");
    c.message = r.string("message");
    if (j.contains("ties") && !j.at("ties").is_null()) {
        c.ties = tie_report_from_json(j.at("ties"), source + " ties");
    }
    if (j.contains("length_bound") && !j.at("length_bound").is_null()) {
        c.length_bound = r.integer("length_bound");
        for (auto [field, target] :
             {std::pair{"ref_length", &c.ref_length}, {"cand_length", &c.cand_length}}) {
            if (j.contains(field) && !j.at(field).is_null()) {
                *target = r.integer(field);
            }
        }
    }
    if (j.contains("error_map")) {
        const json& map = j.at("error_map");
        // Reader keeps a reference to its source: the name must outlive it (a temporary here
        // dangled, and an error about a missing field read freed stack memory; fuzz_protocol).
        const std::string map_source = source + " error_map";
        const Reader m(map, map_source);
        c.error_map.source_rows = m.integer("source_rows");
        c.error_map.source_cols = m.integer("source_cols");
        const auto rows = m.integer("rows");
        const auto cols = m.integer("cols");
        const json& ratio = m.at("ratio");
        if (rows < 0 || cols < 0 || rows > 65536 || cols > 65536 || !ratio.is_array() ||
            ratio.size() != static_cast<std::size_t>(rows * cols)) {
            throw FormatError(source + ": field 'error_map' has inconsistent rows, cols and ratio");
        }
        c.error_map.rows = static_cast<int>(rows);
        c.error_map.cols = static_cast<int>(cols);
        c.error_map.ratio.reserve(ratio.size());
        for (std::size_t i = 0; i < ratio.size(); ++i) {
            json wrapper = {{"v", ratio[i]}};
            c.error_map.ratio.push_back(static_cast<float>(Reader(wrapper, source).real("v")));
        }
    }
    return c;
}

json to_json(const TieReport& t) {
    return {{"rule", t.named.rule},
            {"rows", t.named.rows},
            {"classified", t.classified},
            {"mismatched_elements", t.mismatched_elements},
            {"mismatched_elements_in_tie_rows", t.mismatched_elements_in_tie_rows},
            {"mismatched_rows_in_tie_rows", t.mismatched_rows_in_tie_rows},
            {"mismatched_rows_outside", t.mismatched_rows_outside},
            {"explained", t.explained()},
            {"text", tie_report_text(t)}};
}

TieReport tie_report_from_json(const json& j, const std::string& source) {
    if (!j.is_object()) {
        throw FormatError(source + ": a tie report must be an object");
    }
    const Reader r(j, source);
    TieReport t;
    t.named.rule = r.string("rule");
    const json& rows = r.at("rows");
    if (!rows.is_array()) {
        throw FormatError(source + ": field 'rows' is not an array");
    }
    std::int64_t previous = -1;
    for (const json& row : rows) {
        if (!row.is_number_integer() || row.get<std::int64_t>() <= previous) {
            throw FormatError(source + ": field 'rows' must hold ascending, distinct, non-negative integers");
        }
        previous = row.get<std::int64_t>();
        t.named.rows.push_back(previous);
    }
    t.classified = r.boolean("classified");
    t.mismatched_elements = r.integer("mismatched_elements");
    t.mismatched_elements_in_tie_rows = r.integer("mismatched_elements_in_tie_rows");
    t.mismatched_rows_in_tie_rows = r.integer("mismatched_rows_in_tie_rows");
    t.mismatched_rows_outside = r.integer("mismatched_rows_outside");
    if (t.mismatched_elements < 0 || t.mismatched_elements_in_tie_rows < 0 ||
        t.mismatched_elements_in_tie_rows > t.mismatched_elements || t.mismatched_rows_in_tie_rows < 0 ||
        t.mismatched_rows_outside < 0 ||
        t.mismatched_rows_in_tie_rows > static_cast<std::int64_t>(t.named.rows.size())) {
        throw FormatError(source + ": inconsistent mismatch counts");
    }
    return t;
}

} // namespace pkbw::protocol
