// The paper's table of a sweep, per generation: attempted, correct, faster than the reference,
// fast_p, geomean speedup, failures by kind (docs/sweeps.md "The table").
#pragma once

#include "pkbw/core/sweep_table.h"

#include <filesystem>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pkbw::cli {

// The table itself is computed in core (pkbw/core/sweep_table.h), shared with the GUI.
using pkbw::default_fast_p;
using pkbw::sweep_table;
using pkbw::SweepGenerationRow;
using pkbw::SweepPairView;
using pkbw::SweepTable;

// A timed pair's speedup as the report prints it: "1.31x faster (95% interval 1.020-1.600)", "1.12x
// ambiguous", "0.90x" (no verdict stored), "-" (no speedup).
std::string pair_speedup_text(const SweepPairView& pair);

void print_sweep_table(std::ostream& out, const SweepTable& table, const std::vector<double>& ps);
void print_sweep(std::ostream& out, const SweepTable& table, const std::vector<double>& ps);
nlohmann::json sweep_json(const SweepTable& table, const std::vector<double>& ps);

// `pkbw sweeps` and `pkbw show --sweep ID`.
int list_sweeps_command(const std::filesystem::path& store, bool json, std::ostream& out, std::ostream& err);
int show_sweep_command(const std::filesystem::path& store, std::int64_t sweep_id, bool json,
                       std::ostream& out, std::ostream& err);

} // namespace pkbw::cli
