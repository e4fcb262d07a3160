// Fuzz target: the JSON-lines protocol reader (protocol::parse_line) on one line, the tensor
// comparisons of a rank_result (tensor_comparison_from_json) and the store row made from them. A
// pkbw::Error is the expected outcome for bad input. What parses must survive the launcher's
// forwarding: to_line() then parse_line() succeeds and gives the same object, and a comparison
// written with to_json() reads back the same.
#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/store.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

void fail(const char* what) {
    std::fprintf(stderr, "fuzz_protocol: %s\n", what);
    std::abort();
}

bool same(double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || a == b;
}

bool same(const pkbw::ValueSummary& a, const pkbw::ValueSummary& b) {
    return a.nan_count == b.nan_count && a.inf_count == b.inf_count && a.zero_count == b.zero_count &&
           same(a.min, b.min) && same(a.max, b.max) && same(a.mean, b.mean) && a.all_zero == b.all_zero &&
           a.constant == b.constant;
}

void check_round_trip(const pkbw::TensorComparison& c) {
    nlohmann::json written = pkbw::protocol::to_json(c);
    written["event"] = "tensor"; // a line must name its event; the reader ignores the extra field
    const auto again = pkbw::protocol::tensor_comparison_from_json(
        pkbw::protocol::parse_line(pkbw::protocol::to_line(written), "round trip").body, "round trip");
    const bool scalars =
        again.name == c.name && again.pass == c.pass && again.shape_match == c.shape_match &&
        again.ref_shape == c.ref_shape && again.cand_shape == c.cand_shape &&
        again.ref_dtype == c.ref_dtype && again.cand_dtype == c.cand_dtype &&
        again.dtype_match == c.dtype_match && again.numel == c.numel &&
        again.mismatch_count == c.mismatch_count && same(again.mismatch_fraction, c.mismatch_fraction) &&
        same(again.max_abs_error, c.max_abs_error) && same(again.max_rel_error, c.max_rel_error) &&
        same(again.worst_ratio, c.worst_ratio) && again.first_mismatch == c.first_mismatch &&
        again.worst_mismatch == c.worst_mismatch && again.max_ulp == c.max_ulp &&
        same(again.min_passing_atol, c.min_passing_atol) && same(again.ref_summary, c.ref_summary) &&
        same(again.cand_summary, c.cand_summary) && again.message == c.message;
    if (!scalars)
        fail("a tensor comparison read back differently");
    // An empty error map is not written at all (its source sizes with it).
    if (!c.error_map.ratio.empty()) {
        const auto& a = again.error_map;
        const auto& b = c.error_map;
        if (a.rows != b.rows || a.cols != b.cols || a.source_rows != b.source_rows ||
            a.source_cols != b.source_cols || a.ratio.size() != b.ratio.size())
            fail("an error map read back differently");
        for (std::size_t i = 0; i < a.ratio.size(); ++i)
            if (!same(a.ratio[i], b.ratio[i]))
                fail("an error map cell read back differently");
    }
    // The engine stores what it read; the mapping to a row must take anything the reader accepted.
    const pkbw::TensorResultRow row = pkbw::from_comparison(c);
    if (row.name != c.name || row.error_map.ratio.size() != c.error_map.ratio.size())
        fail("from_comparison lost a field");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view line(reinterpret_cast<const char*>(data), size);
    pkbw::protocol::Message message;
    try {
        message = pkbw::protocol::parse_line(line, "fuzz");
    } catch (const pkbw::Error&) {
        return 0;
    }
    // The launcher forwards every event with to_line(); the GUI reads it back with parse_line().
    try {
        const auto forwarded = pkbw::protocol::parse_line(pkbw::protocol::to_line(message.body), "forwarded");
        if (forwarded.event != message.event || forwarded.body != message.body)
            fail("a forwarded line reads back differently");
    } catch (const pkbw::Error& e) {
        std::fprintf(stderr, "fuzz_protocol: forwarded line refused: %s\n", e.what());
        std::abort();
    }
    // rank_result tensors (and run_finished's, nested in trials/ranks) go to the store.
    auto tensors_of = [](const nlohmann::json& holder, auto&& each) {
        const auto it = holder.find("tensors");
        if (it != holder.end() && it->is_array())
            for (const auto& t : *it)
                each(t);
    };
    auto read_tensor = [](const nlohmann::json& t) {
        pkbw::TensorComparison c;
        try {
            c = pkbw::protocol::tensor_comparison_from_json(t, "fuzz tensor");
        } catch (const pkbw::Error&) {
            return;
        }
        try {
            check_round_trip(c);
        } catch (const pkbw::Error& e) {
            std::fprintf(stderr, "fuzz_protocol: a comparison written by to_json is refused: %s\n", e.what());
            std::abort();
        }
    };
    if (message.event == pkbw::protocol::kRankResult) {
        tensors_of(message.body, read_tensor);
    } else if (message.event == pkbw::protocol::kRunFinished) {
        const auto trials = message.body.find("trials");
        if (trials != message.body.end() && trials->is_array())
            for (const auto& trial : *trials)
                if (trial.is_object() && trial.contains("ranks") && trial.at("ranks").is_array())
                    for (const auto& rank : trial.at("ranks"))
                        if (rank.is_object())
                            tensors_of(rank, read_tensor);
    }
    return 0;
}
