// The comparison of two output sets (a rank's reference and candidate outputs): every leaf of the
// reference by name, PKB's value leaves as JSON, the first failure as the set's message
// (docs/comparison.md). Each tensor leaf goes through compare_leaf (compare_lengths.cpp).
#include "pkbw/core/compare.h"
#include "pkbw/core/error.h"

#include <nlohmann/json.hpp>
#include <set>

namespace pkbw {

namespace {

std::set<std::string> duplicates(const OutputSet& set) {
    std::set<std::string> seen, dup;
    for (const auto& t : set.tensors) {
        if (!seen.insert(t.name).second || set.values.count(t.name)) {
            dup.insert(t.name);
        }
    }
    return dup;
}

nlohmann::json parse_value(const std::string& name, const std::string& side, const std::string& text) {
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw FormatError("output " + name + " (" + side + "): non-tensor value is not JSON: " + e.what());
    }
}

} // namespace

OutputComparison compare_outputs(const OutputSet& ref, const OutputSet& cand, const CompareOptions& options,
                                 const TieRowsByOutput& ties) {
    OutputComparison out;
    std::vector<std::string> failures; // in reference order, for first_error
    for (const auto& name : duplicates(ref)) {
        out.structure_errors.push_back("duplicate name in ref: " + name);
    }
    for (const auto& name : duplicates(cand)) {
        out.structure_errors.push_back("duplicate name in cand: " + name);
    }
    failures = out.structure_errors;

    for (const auto& entry : ref.tensors) {
        if (const Tensor* other = cand.find(entry.name)) {
            const auto tie = ties.find(entry.name);
            out.tensors.push_back(compare_leaf(entry.name, entry.tensor, ref.find_length(entry.name), *other,
                                               cand.find_length(entry.name), options,
                                               tie == ties.end() ? nullptr : &tie->second));
            if (!out.tensors.back().pass) {
                failures.push_back(out.tensors.back().message);
            }
        } else {
            const std::string e = cand.values.count(entry.name)
                                      ? entry.name + ": tensor in ref, value in cand"
                                      : "only in ref: " + entry.name;
            out.structure_errors.push_back(e);
            failures.push_back(e);
        }
    }
    for (const auto& [name, text] : ref.values) {
        std::string e;
        if (auto it = cand.values.find(name); it != cand.values.end()) {
            const auto a = parse_value(name, "ref", text), b = parse_value(name, "cand", it->second);
            if (a != b) { // numbers compare by value (1 == 1.0), as Python's == does
                e = name + ": values differ (ref " + a.dump() + " vs cand " + b.dump() + ")";
            }
        } else {
            e = cand.find(name) ? name + ": value in ref, tensor in cand" : "only in ref: " + name;
        }
        if (!e.empty()) {
            out.structure_errors.push_back(e);
            failures.push_back(e);
        }
    }
    for (const auto& entry : cand.tensors) {
        if (!ref.find(entry.name) && !ref.values.count(entry.name)) {
            out.structure_errors.push_back("only in cand: " + entry.name);
            failures.push_back(out.structure_errors.back());
        }
    }
    for (const auto& [name, text] : cand.values) {
        if (!ref.values.count(name) && !ref.find(name)) {
            out.structure_errors.push_back("only in cand: " + name);
            failures.push_back(out.structure_errors.back());
        }
    }
    out.pass = failures.empty();
    if (!failures.empty()) {
        out.first_error = failures.front();
    }
    return out;
}

} // namespace pkbw
