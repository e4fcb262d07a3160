// "Did you mean": the closest names to something mistyped (an option, a command, a problem), and the
// message for a problem pkbw does not know, which names PKB's problems that pkbw has no native port of.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw::cli {

// Optimal string alignment distance (insertions, deletions, substitutions, adjacent swaps).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The names closest to `typed`, best first, at most `at_most`; only those close enough to be a
// plausible typo (a distance of at most a third of the longer name, at least 2), or that contain
// `typed` (or it them) when it is 3 characters or more.
std::vector<std::string> closest_names(std::string_view typed, const std::vector<std::string>& names,
                                       std::size_t at_most = 3);

// ParallelKernelBench's 87 problem stems, in PKB's order (PKB HEAD 3cc0f9b, reference/*.py): the one
// list pkbw keeps of them, to say which PKB problems have no native port here.
const std::vector<std::string>& pkb_problem_stems();

// Why `typed` names no problem of this pkbw: a PKB problem without a native port (with --pkb-checkout
// as the way to run its solutions), or the closest known stems, or where the list is.
std::string unknown_problem_message(const std::string& typed);

} // namespace pkbw::cli
