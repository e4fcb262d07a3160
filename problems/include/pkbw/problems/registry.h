// The problems compiled into pkbw: one folder per problem under problems/, listed at build time.
#pragma once

#include "pkbw/core/problem.h"

#include <string>
#include <string_view>
#include <vector>

namespace pkbw {

// Every problem, ordered by id.
const std::vector<const Problem*>& all_problems();
// Resolves a number ("2"), a stem ("2_allgather") or a stem with ".py" as PKB's --problem does;
// nullptr if unknown.
const Problem* find_problem(std::string_view number_or_stem);
// The folder holding the problem's sources (reference.cu, reference_host.cpp), relative to the data
// root (see engine's locate): "problems/2_allgather".
std::string problem_folder(const Problem& problem);

} // namespace pkbw
