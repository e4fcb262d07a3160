// Flags of a PKB Python solution, from its own source: the same severities as a native candidate's
// (elf_symbols.h, docs/engine.md "Flags"), read from what its code calls rather than from an object's
// symbols. Comments and docstrings are not code (safety.h's code_only); the CUDA that the solution hands
// to load_inline is, so an NCCL call there counts as one in Python does.
#pragma once

#include "elf_symbols.h"
#include "pkbw/core/problem.h"

#include <string>
#include <string_view>
#include <vector>

namespace pkbw::cli {

// The NCCL function of `problem`'s collective ("ncclAllReduce") where that collective is the whole
// problem (category CC: PKB 1-8), so that a candidate calling it lets the library give the answer; ""
// for every other problem (its collective is a building block around the candidate's own computation)
// or when the descriptor cannot say for `config`.
std::string own_collective_symbol(const Problem& problem, const ProblemConfig& config);

// The flags of a Python solution's `source`. `problem_collective` as in candidate_flags: the problem's
// own collective ("ncclAllReduce"), called through torch.distributed or NCCL, is suspect (the library
// does the work the solution is judged on); other collectives and torch's GEMMs are info; replacing a
// timer, reaching into other modules or frames (the judge's, in its process), reading the process's
// memory maps, importing PKB's reference and starting threads or processes are suspect; loading a native
// library through ctypes is info.
std::vector<Flag> python_candidate_flags(std::string_view source, const std::string& problem_collective);

} // namespace pkbw::cli
