// `pkbw export-bundle RUN... | --sweep ID FILE`: a self-contained file of runs and their artifacts
// (core/bundle.h; docs/formats.md "Bundles", docs/cli.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <vector>

namespace pkbw::cli {

// Returns the exit code (0, or kExitUsage for bad input, naming the run, sweep or file).
int run_export_bundle(const std::filesystem::path& store, const std::vector<std::int64_t>& runs,
                      std::optional<std::int64_t> sweep, const std::filesystem::path& file, std::ostream& out,
                      std::ostream& err);

} // namespace pkbw::cli
