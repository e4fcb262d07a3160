// PKB's correctness rule, exactly (docs/formats.md "Comparison"): shapes must be equal; both sides
// are cast to f32; an element matches when |ref - cand| <= atol + rtol * |cand| (rtol scales with
// the candidate, as torch.allclose(ref, cand) does); NaN never matches; equal infinities match;
// dtype is not part of the verdict. Beside the verdict it computes what PKB never reports.
#pragma once

#include "pkbw/core/outputs.h"
#include "pkbw/core/tie_rows.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace pkbw {

// PKB's tolerance (torch.allclose's atol and rtol in its harness): every default of the run, the rank
// and the store reads this one.
inline constexpr double kPkbTolerance = 1e-2;

struct CompareOptions {
    double atol = kPkbTolerance;
    double rtol = kPkbTolerance;
    // The error map is at most this many cells on each side (max-pooled).
    int error_map_max_side = 256;
};

// Max-pooled map of the error ratio |ref - cand| / (atol + rtol * |cand|) over a tensor viewed as
// 2-D (leading dimensions folded into rows). A value above 1 fails; NaN mismatches are +inf.
struct ErrorMap {
    std::int64_t source_rows = 0, source_cols = 0; // the 2-D view of the tensor
    int rows = 0, cols = 0;                        // the map's size
    std::vector<float> ratio;                      // rows * cols, row-major
};

// Summary of one side's values, to flag outputs that pass a loose tolerance without computing
// anything (all zeros, one constant).
struct ValueSummary {
    std::int64_t nan_count = 0, inf_count = 0, zero_count = 0;
    double min = 0, max = 0, mean = 0; // over finite values
    bool all_zero = false;
    bool constant = false; // every finite element equal (and at least one element)
};

struct TensorComparison {
    std::string name;
    bool pass = false;
    bool shape_match = false;
    Shape ref_shape, cand_shape;
    DType ref_dtype = DType::F32, cand_dtype = DType::F32;
    bool dtype_match = false; // reported, never part of the verdict

    std::int64_t numel = 0;
    std::int64_t mismatch_count = 0;
    double mismatch_fraction = 0;
    double max_abs_error = 0;         // over elements where both sides are finite
    double max_rel_error = 0;         // |ref - cand| / |cand|, over finite elements with cand != 0
    double worst_ratio = 0;           // max of |ref - cand| / (atol + rtol |cand|); +inf for NaN mismatches
    std::int64_t first_mismatch = -1; // logical (row-major) index, -1 if none
    std::int64_t worst_mismatch = -1; // index of worst_ratio among mismatches, -1 if none
    // ULP distance (max over elements with both sides finite), counted in the reference's dtype when
    // both sides share a float dtype, otherwise in f32; absent for integer and bool outputs.
    std::optional<std::uint64_t> max_ulp;
    // Smallest atol that would pass at the given rtol; +inf when a NaN/Inf mismatch no atol fixes.
    double min_passing_atol = 0;
    ValueSummary ref_summary, cand_summary;
    ErrorMap error_map;
    std::string message; // empty when passing; otherwise PKB-like text naming the tensor
    // Set when the problem named tie rows for this output (Problem::tie_rows): whether its mismatches lie
    // in them. A tie-explained output still fails; its message ends with tie_report_text.
    std::optional<TieReport> ties;
    // Set for a variable-length output (OutputLength): the bound and each side's reported length. Lengths
    // that differ fail with "<name>: length C, the reference's R"; equal lengths compare the valid prefix.
    std::optional<std::int64_t> length_bound, ref_length, cand_length;
};

struct OutputComparison {
    bool pass = false;
    std::vector<TensorComparison> tensors;     // leaf by leaf, in reference order
    std::vector<std::string> structure_errors; // missing/extra names, non-tensor value mismatches
    std::string first_error;                   // first failure, as one line (empty when passing)
};

// A comparison before anything is compared: its name and both tensors' shapes and dtypes (dtype_match
// set; shape_match left to the caller, which decides what a shape means: compare_tensors compares them,
// a length failure never got that far).
TensorComparison comparison_header(const std::string& name, const Tensor& ref, const Tensor& cand);

// Compares two tensors. Streams over the elements without materialising f64 copies. With `ties` (this
// output's tie rows, as Problem::checked_tie_rows gives them) the result carries a TieReport.
TensorComparison compare_tensors(const Tensor& ref, const Tensor& cand, const CompareOptions& options,
                                 const std::string& name = "output", const TieRows* ties = nullptr);
// Compares one output leaf: compare_tensors, with the length rule first when either side is a
// variable-length output (a reported length out of range or differing from the reference's fails
// naming both; equal lengths compare the valid prefixes).
// A null length is a fixed-shape side.
TensorComparison compare_leaf(const std::string& name, const Tensor& ref, const OutputLength* ref_length,
                              const Tensor& cand, const OutputLength* cand_length,
                              const CompareOptions& options, const TieRows* ties = nullptr);
// Compares leaf by leaf: same tensor names (order-insensitive), same non-tensor values, every tensor
// compared. pass = no structure error and every tensor passes. `ties` maps output names to their tie rows.
OutputComparison compare_outputs(const OutputSet& ref, const OutputSet& cand, const CompareOptions& options,
                                 const TieRowsByOutput& ties = {});

} // namespace pkbw
