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

} // namespace pkbw
