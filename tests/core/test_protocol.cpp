// The JSON-lines protocol reader: what it accepts, and the inputs the fuzzer (fuzz_protocol) showed it
// must refuse rather than pass on in a form that crashes or misleads the next reader.
#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"

#include <gtest/gtest.h>
#include <string>

namespace pkbw::protocol {
namespace {

std::string tensor_json(const std::string& numel = "4", const std::string& max_ulp = "3") {
    return R"({"name":"out","pass":false,"shape_match":true,"ref_shape":[2,2],"cand_shape":[2,2],)"
           R"("ref_dtype":"f32","cand_dtype":"f32","dtype_match":true,"numel":)" +
           numel +
           R"(,"mismatch_count":1,"mismatch_fraction":0.25,"max_abs_error":0.5,)"
           R"("max_rel_error":"inf","worst_ratio":25,"first_mismatch":3,"worst_mismatch":3,"max_ulp":)" +
           max_ulp +
           R"(,"min_passing_atol":0.5,"ref_summary":{"nan_count":0,"inf_count":0,"zero_count":1,"min":0,)"
           R"("max":1,"mean":0.5,"all_zero":false,"constant":false},"cand_summary":{"nan_count":1,)"
           R"("inf_count":0,"zero_count":0,"min":"-inf","max":"nan","mean":"nan","all_zero":false,)"
           R"("constant":false},"message":"out: 1/4 mismatched","error_map":{"source_rows":2,)"
           R"("source_cols":2,"rows":1,"cols":2,"ratio":[0,"inf"]}})";
}

TEST(ProtocolTest, ParsesARankResultAndItsTensor) {
    const auto m = parse_line(R"({"event":"rank_result","rank":1,"trial":0,"status":"mismatch","tensors":[)" +
                                  tensor_json() + "]}",
                              "pipe");
    EXPECT_EQ(m.event, "rank_result");
    const auto c = tensor_comparison_from_json(m.body.at("tensors").at(0), "pipe");
    EXPECT_EQ(c.numel, 4);
    EXPECT_EQ(c.max_ulp, 3u);
    EXPECT_TRUE(std::isinf(c.max_rel_error));
    EXPECT_TRUE(std::isnan(c.cand_summary.mean));
    ASSERT_EQ(c.error_map.ratio.size(), 2u);
    EXPECT_TRUE(std::isinf(c.error_map.ratio[1]));
    // What is written is read back the same.
    auto written = to_json(c);
    written["event"] = "tensor";
    const auto again = tensor_comparison_from_json(parse_line(to_line(written), "x").body, "x");
    EXPECT_EQ(again.max_ulp, 3u);
    EXPECT_EQ(again.first_mismatch, 3);
    EXPECT_EQ(again.error_map.ratio, c.error_map.ratio);
}

// Issue 16: a tensor's tie report travels in the rank_result event and is read back as written.
TEST(ProtocolTest, TieReportRoundTripsAndBadOnesAreNamed) {
    TensorComparison c = tensor_comparison_from_json(nlohmann::json::parse(tensor_json()), "pipe");
    EXPECT_FALSE(c.ties);
    EXPECT_FALSE(to_json(c).contains("ties"));
    c.ties = TieReport{{{0, 1}, "top-2: 2nd and 3rd equal"}, true, 1, 1, 1, 0};
    nlohmann::json written = to_json(c);
    written["event"] = "tensor";
    EXPECT_EQ(written.at("ties").at("explained"), true);
    EXPECT_EQ(written.at("ties").at("text"),
              "tie-explained: the 1 mismatched element is in 1 of the 2 tie rows (top-2: 2nd and 3rd equal)");
    const auto again = tensor_comparison_from_json(parse_line(to_line(written), "x").body, "x");
    ASSERT_TRUE(again.ties);
    EXPECT_EQ(again.ties->named.rows, (std::vector<std::int64_t>{0, 1}));
    EXPECT_EQ(again.ties->named.rule, "top-2: 2nd and 3rd equal");
    EXPECT_TRUE(again.ties->explained());
    EXPECT_EQ(again.ties->mismatched_rows_in_tie_rows, 1);

    auto message_of = [](nlohmann::json ties) {
        try {
            tie_report_from_json(ties, "pipe ties");
        } catch (const FormatError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    nlohmann::json bad = written.at("ties");
    bad["rows"] = {1, 0};
    EXPECT_EQ(message_of(bad),
              "pipe ties: field 'rows' must hold ascending, distinct, non-negative integers");
    bad = written.at("ties");
    bad["mismatched_elements_in_tie_rows"] = 2;
    EXPECT_EQ(message_of(bad), "pipe ties: inconsistent mismatch counts");
    bad = written.at("ties");
    bad.erase("rule");
    EXPECT_EQ(message_of(bad), "pipe ties: missing field 'rule'");
}

TEST(ProtocolTest, RefusesAMissingOrMistypedRequiredField) {
    EXPECT_THROW(parse_line(R"({"event":"hello","rank":0,"world_size":2})", "pipe"), FormatError);
    EXPECT_THROW(parse_line(R"({"event":"phase","rank":"0","phase":"run","trial":0})", "pipe"), FormatError);
    EXPECT_NO_THROW(parse_line(R"({"event":"some_future_event"})", "pipe"));
}

// Parsing is iterative but dump() and copies recurse: a line nested 200000 deep used to parse, and the
// launcher forwarding it with to_line() ran out of stack.
TEST(ProtocolTest, RefusesDeepNesting) {
    const std::string deep = R"({"event":"log","rank":0,"text":"x","extra":)" + std::string(200000, '[') +
                             std::string(200000, ']') + "}";
    try {
        parse_line(deep, "rank 3 control pipe");
        FAIL() << "accepted";
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("rank 3 control pipe: nesting deeper than 64"),
                  std::string::npos)
            << e.what();
    }
    // 64 levels, the object included, are fine.
    const std::string ok = R"({"event":"x","a":)" + std::string(63, '[') + std::string(63, ']') + "}";
    EXPECT_NO_THROW(parse_line(ok, "pipe"));
    EXPECT_THROW(
        parse_line(R"({"event":"x","a":)" + std::string(64, '[') + std::string(64, ']') + "}", "pipe"),
        FormatError);
}

// 1e400 parsed as +inf, and to_line() wrote it as null: the forwarded line said something else.
TEST(ProtocolTest, RefusesNumbersOutsideTheDoubleRange) {
    EXPECT_THROW(parse_line(R"({"event":"perf_result","rank":0,"samples_ms":[1e400]})", "pipe"), FormatError);
    EXPECT_THROW(parse_line(R"({"event":"x","v":-2e308})", "pipe"), FormatError);
    const auto m = parse_line(R"({"event":"x","v":1.7e308})", "pipe");
    EXPECT_EQ(m.body, parse_line(to_line(m.body), "again").body);
}

// numel 2^64 - 1 was read as -1, and max_ulp -1 as 18446744073709551615.
TEST(ProtocolTest, RefusesIntegersThatWouldWrap) {
    const auto huge = nlohmann::json::parse(tensor_json("18446744073709551615"));
    EXPECT_THROW(tensor_comparison_from_json(huge, "t"), FormatError);
    const auto negative_ulp = nlohmann::json::parse(tensor_json("4", "-1"));
    EXPECT_THROW(tensor_comparison_from_json(negative_ulp, "t"), FormatError);
    const auto big_ulp = nlohmann::json::parse(tensor_json("4", "18446744073709551615"));
    EXPECT_EQ(tensor_comparison_from_json(big_ulp, "t").max_ulp, 18446744073709551615ull);
    const auto null_ulp = nlohmann::json::parse(tensor_json("4", "null"));
    EXPECT_FALSE(tensor_comparison_from_json(null_ulp, "t").max_ulp.has_value());
}

// The error map's reader kept a reference to a temporary name: a missing field in the map read
// freed stack memory to build its message (ASan: stack-use-after-scope, found by fuzz_protocol).
TEST(ProtocolTest, AnErrorMapMissingAFieldIsNamed) {
    for (const char* field : {"source_rows", "source_cols", "rows", "cols", "ratio"}) {
        auto tensor = nlohmann::json::parse(tensor_json());
        tensor["error_map"].erase(field);
        try {
            tensor_comparison_from_json(tensor, "rank 1 trial 0");
            FAIL() << field;
        } catch (const FormatError& e) {
            EXPECT_EQ(std::string(e.what()),
                      std::string("rank 1 trial 0 error_map: missing field '") + field + "'");
        }
    }
}

} // namespace
} // namespace pkbw::protocol
