// The length rule of variable-length outputs (docs/comparison.md "Variable-length outputs"), ahead of
// the element rule: the two sides' valid prefixes are compared only when both reported the same length.
#include "pkbw/core/compare.h"

#include <string>

namespace pkbw {
namespace {

std::string length_problem(const std::string& side, const OutputLength& length) {
    if (length.reported == kLengthNotReported) {
        return side + " reported no length (bound " + std::to_string(length.bound) + ")";
    }
    return side + " reported length " + std::to_string(length.reported) + ", outside 0.." +
           std::to_string(length.bound) + " (the output's bound)";
}

TensorComparison length_failure(const std::string& name, const Tensor& ref, const Tensor& cand,
                                const std::string& message) {
    TensorComparison out = comparison_header(name, ref, cand);
    out.message = name + ": " + message;
    return out;
}

} // namespace

TensorComparison compare_leaf(const std::string& name, const Tensor& ref, const OutputLength* ref_length,
                              const Tensor& cand, const OutputLength* cand_length,
                              const CompareOptions& options, const TieRows* ties) {
    if (ref_length == nullptr && cand_length == nullptr) {
        return compare_tensors(ref, cand, options, name, ties);
    }
    // One side variable and the other not: the two were not produced under the same spec.
    if (ref_length == nullptr || cand_length == nullptr) {
        return length_failure(name, ref, cand,
                              std::string("variable length on one side only (the ") +
                                  (ref_length ? "reference" : "candidate") + ")");
    }
    const OutputLength& r = *ref_length;
    const OutputLength& c = *cand_length;
    TensorComparison out;
    if (!c.valid()) {
        out = length_failure(name, ref, cand, length_problem("the candidate", c));
    } else if (!r.valid()) {
        out = length_failure(name, ref, cand, length_problem("the reference", r));
    } else if (r.reported != c.reported) {
        out = length_failure(name, ref, cand,
                             "length " + std::to_string(c.reported) + ", the reference's " +
                                 std::to_string(r.reported));
    } else {
        out = compare_tensors(ref, cand, options, name, ties);
    }
    out.length_bound = r.bound;
    out.ref_length = r.reported;
    out.cand_length = c.reported;
    return out;
}

} // namespace pkbw
