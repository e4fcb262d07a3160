// Rows of an output whose reference values depend on a tie in the reference's top-k choice (issue 16):
// what a problem names through Problem::tie_rows and what the comparison classifies a mismatch against
// (docs/comparison.md, "Tie-explained mismatches").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pkbw {

// One output's tie rows. A row is the set of elements that share an index along dim 0 (for MoE outputs,
// a token); a 0-dim output has one row, 0.
struct TieRows {
    std::vector<std::int64_t> rows; // ascending, distinct (Problem::checked_tie_rows makes them so)
    // The rule that made them tie rows, one short line for the user, e.g.
    // "top-2 of the bf16 router softmax: 2nd and 3rd equal".
    std::string rule;
};

// By tensor output name, as in Problem::output_specs ("output", "output_0", ...). Outputs without tie
// rows are absent.
using TieRowsByOutput = std::map<std::string, TieRows>;

// What the comparison found about one output's tie rows (TensorComparison::ties, the protocol's and the
// store's "ties" object). Present for every output the problem named tie rows for, passing or not.
struct TieReport {
    TieRows named; // the problem's tie rows and rule for this output
    // The output mismatched element-wise (equal shapes): the counts below are set. A shape mismatch or a
    // passing output leaves them 0 and this false.
    bool classified = false;
    std::int64_t mismatched_elements = 0;             // every mismatched element of the output
    std::int64_t mismatched_elements_in_tie_rows = 0; // of those, the ones in a tie row
    std::int64_t mismatched_rows_in_tie_rows = 0;     // tie rows holding a mismatched element
    std::int64_t mismatched_rows_outside = 0;         // other rows holding a mismatched element

    // Every mismatched element lies in a tie row. The verdict is still a mismatch: this says why.
    bool explained() const {
        return classified && mismatched_elements > 0 &&
               mismatched_elements_in_tie_rows == mismatched_elements;
    }
};

// One line for the user, the same in the tensor's message, `pkbw show` and the GUI, e.g.
// "tie-explained: all 12 mismatched elements are in 3 of the 5 tie rows (top-2 ...: 2nd and 3rd equal)" or
// "not tie-explained: 7 mismatched rows are outside the 5 tie rows, 2 inside (...)". Empty when the report
// is not classified.
std::string tie_report_text(const TieReport& report);

} // namespace pkbw
