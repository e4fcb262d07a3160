#include "candidate_process.h"
#include "checked_timing_steps.h"
#include "pkbw/core/compare.h"
#include "pkbw/core/status.h"
#include "timed_lengths.h"
#include "timing_inputs.h"
#include "trial_buffers.h"

#include <algorithm>

// Every timed call of the candidate checked against the reference's call on the same inputs (docs/perf.md
// "Every timed call is a checked call"): counted on the device, explained by core's comparison.
namespace pkbw::engine::checked_timing_steps {

// Why call `call` of group `group` failed, in core's words (the device only counted).
CheckedTiming::CallFailure CheckedTiming::explain(int group, int call) {
    const int set = group * plan_.calls_per_block + call % plan_.calls_per_block; // a later pass reads a copy
    CallFailure failure;
    auto outputs_of = [&](const Side& side, bool count_poison) {
        OutputSet outputs;
        const auto views = outputs_layout_.views(const_cast<void*>(pair_outputs(side)), call);
        for (std::size_t t = 0; t < views.size(); ++t) {
            Tensor tensor = Tensor::zeros(outputs_layout_.specs[t].dtype, outputs_layout_.specs[t].shape);
            if (tensor.nbytes() > 0) {
                p_.device.download(tensor.mutable_data(), views[t].data, tensor.nbytes());
            }
            if (count_poison) {
                const std::size_t size = dtype_size(tensor.dtype());
                for (std::int64_t i = 0; i < tensor.numel(); ++i) {
                    const std::byte* element = tensor.data() + static_cast<std::size_t>(i) * size;
                    failure.unwritten += std::all_of(element, element + size,
                                                     [](std::byte b) { return b == std::byte{kPoisonByte}; });
                }
            }
            outputs.add(outputs_layout_.specs[t].name, std::move(tensor));
        }
        outputs.values = p_.problem->checked_output_values(inputs_->config(set), p_.rank);
        return outputs;
    };
    const OutputComparison comparison =
        compare_outputs(outputs_of(reference_, false), outputs_of(candidate_, true),
                        CompareOptions{c_.atol, c_.rtol, 256}, inputs_->tie_rows(set));
    failure.message = comparison.pass ? std::string() : comparison.first_error;
    return failure;
}

std::string CheckedTiming::call_name(int call) const {
    std::string name = "call " + std::to_string(call) + " of " + std::to_string(slot_calls());
    if (graph_slots()) {
        name += " (pass " + std::to_string(call / plan_.calls_per_block + 1) + " of " +
                std::to_string(graph_passes_) + ", on a copy of set " +
                std::to_string(call % plan_.calls_per_block) + ")";
    }
    return name;
}

void CheckedTiming::check_pair(int group, int candidate_block) {
    std::vector<MismatchQuery> queries;
    // Variable-length outputs: lengths first; only the valid prefix of agreeing ones is compared.
    const TimedLengthCheck lengths = TimedLengths::check(reference_.lengths.get(), candidate_.lengths.get(),
                                                         p_.device, outputs_layout_.specs, slot_calls());
    for (int k = 0; k < slot_calls(); ++k) {
        const auto ref = outputs_layout_.views(const_cast<void*>(pair_outputs(reference_)), k);
        const auto cand = outputs_layout_.views(const_cast<void*>(pair_outputs(candidate_)), k);
        for (std::size_t t = 0; t < ref.size(); ++t) {
            const Shape& shape = outputs_layout_.specs[t].shape;
            const std::int64_t row = shape.empty() || shape[0] == 0 ? 1 : shape_numel(shape) / shape[0];
            const std::int64_t rows = lengths.rows[static_cast<std::size_t>(k)][t];
            queries.push_back({ref[t].data, cand[t].data, outputs_layout_.specs[t].dtype,
                               static_cast<std::size_t>(shape.empty() ? 1 : rows * row)});
        }
    }
    const auto counts = p_.device.count_mismatches(queries, c_.atol, c_.rtol);
    const std::size_t per_call = outputs_layout_.specs.size();
    std::int64_t elements = 0;
    for (const auto& spec : outputs_layout_.specs) {
        elements += shape_numel(spec.shape);
    }
    // A few elements beyond the tolerance, none far beyond, is how an honest kernel's different order of
    // summation shows on some of hundreds of fresh inputs: said, not held against the timing.
    const auto borderline_limit = static_cast<std::uint64_t>(std::max<std::int64_t>(1, elements / 10000));
    int failed = 0, borderline = 0;
    std::string message, kind, borderline_message;
    for (int k = 0; k < slot_calls(); ++k) {
        MismatchCount count;
        for (std::size_t t = 0; t < per_call; ++t) {
            count.mismatches += counts[static_cast<std::size_t>(k) * per_call + t].mismatches;
            count.gross += counts[static_cast<std::size_t>(k) * per_call + t].gross;
        }
        if (const std::string& length = lengths.messages[static_cast<std::size_t>(k)]; !length.empty()) {
            if (message.empty()) {
                message = call_name(k) + ": " + length;
                kind = "length";
            }
            ++failed;
            continue;
        }
        if (count.mismatches == 0) {
            continue;
        }
        const bool is_borderline = count.gross == 0 && count.mismatches <= borderline_limit;
        std::string& first = is_borderline ? borderline_message : message;
        if (first.empty()) {
            // core's comparison decides the first one of each kind the device counted, and says why.
            const CallFailure failure = explain(group, k);
            if (failure.message.empty()) {
                continue; // core clears it: the device's count follows the same rule, so this is rare
            }
            first = call_name(k) + ": " + failure.message;
            if (!is_borderline) {
                kind = failure.unwritten > 0 ? "unwritten" : "wrong";
            }
        }
        ++(is_borderline ? borderline : failed);
    }
    // A timed check's status: pass, mismatch, or unchecked (the problem has no tensor output to compare).
    const std::string status = per_call == 0 ? std::string(pkbw::status::kUnchecked)
                               : failed == 0 ? std::string(pkbw::status::kPass)
                                             : std::string(pkbw::status::kMismatch);
    if (per_call == 0) {
        message = "the problem has no tensor output to check";
    }
    p_.events.send({{"event", protocol::kTimedCheck},
                    {"rank", p_.rank},
                    {"block", candidate_block},
                    {"side", "candidate"},
                    {"calls", slot_calls()},
                    {"failed_calls", failed},
                    {"status", status},
                    {"kind", kind},
                    {"message", message},
                    {"borderline_calls", borderline},
                    {"borderline_message", borderline_message}});
}

} // namespace pkbw::engine::checked_timing_steps
