// The problems compiled into pkbw: one folder per problem under problems/, listed at build time.
#pragma once

#include "pkbw/core/problem.h"

#include <string>
#include <string_view>
#include <vector>

namespace pkbw {

// Every problem, ordered by id.
const std::vector<const Problem*>& all_problems();
// Adds a problem that has no folder under problems/: a test's own problem, registered by a static
// initializer of a test executable (and of the rank program built for that test) before main runs.
// Must be called before the first all_problems() or find_problem; its id must be unused.
void register_extra_problem(const Problem& problem);
// Resolves a number ("2"), a stem ("2_allgather") or a stem with ".py" as PKB's --problem does;
// nullptr if unknown.
const Problem* find_problem(std::string_view number_or_stem);
// The folder holding the problem's sources (reference.cu, reference_host.cpp), relative to the data
// root (see engine's locate): "problems/2_allgather".
std::string problem_folder(const Problem& problem);

} // namespace pkbw
