// The perf options' defaults: what the run contract's "perf" object (config.json, docs/perf.md) means
// where a field is absent. Every side reads them from here: the CLI's flags (engine/cli/judge_command.h),
// pkbw-rank's PerfOptions (engine/runtime/perf_runner.h) and, as PERF_* constants, PKB's Python judge
// (engine/python/pkbw_pkb_contract.py; tests/engine/test_pkb_contract_words.py fails when one drifts).
#pragma once

#include <string_view>

namespace pkbw::perf_defaults {

inline constexpr bool kPerfPkb = true;         // time PKB's protocol too (the PKB-compatible figure)
inline constexpr int kPerfPkbWarmup = 500;     // PKB's warm-up calls per side
inline constexpr int kPerfPkbIterations = 100; // PKB's timed calls per side
inline constexpr bool kPerfPkbw = true;        // time pkbw's protocol
inline constexpr int kPerfWarmup = 50;         // calls per side before the first block
inline constexpr int kPerfPairs = 5;           // ABBA: blocks of each side per launch
inline constexpr int kPerfIterations = 50;     // calls per block (raised until its inputs span 3x L2)
inline constexpr std::string_view kPerfRotation = "copies"; // fresh inputs per call | "none"
inline constexpr double kPerfRotationMemoryFraction = 0.25; // device memory cap for timed inputs, slots

} // namespace pkbw::perf_defaults
