#include "pkbw/core/run_layout.h"

namespace fs = std::filesystem;

namespace pkbw::run_layout {
namespace {

void replace(std::string& text, std::string_view field, std::string_view value) {
    for (auto at = text.find(field); at != std::string::npos; at = text.find(field, at + value.size()))
        text.replace(at, field.size(), value);
}

} // namespace

std::string fill(std::string_view pattern, int rank, int trial, std::string_view side) {
    std::string text(pattern);
    replace(text, "{rank}", std::to_string(rank));
    replace(text, "{trial}", std::to_string(trial));
    replace(text, "{side}", side);
    return text;
}

fs::path config(const fs::path& run_dir) {
    return run_dir / kConfig;
}

fs::path environment(const fs::path& run_dir) {
    return run_dir / kEnvironment;
}

fs::path compile_log(const fs::path& run_dir, std::string_view side) {
    return run_dir / fill(kCompileLog, 0, 0, side);
}

fs::path rank_log(const fs::path& run_dir, int rank) {
    return run_dir / fill(kRankLog, rank);
}

fs::path rank_events(const fs::path& run_dir, int rank) {
    return run_dir / fill(kRankEvents, rank);
}

fs::path trial_dir(const fs::path& run_dir, int trial) {
    return run_dir / fill(kTrialDir, 0, trial);
}

fs::path trial_outputs(const fs::path& run_dir, int trial, int rank, std::string_view side) {
    return trial_dir(run_dir, trial) / fill(kTrialOutputs, rank, trial, side);
}

fs::path trial_inputs(const fs::path& run_dir, int trial, int rank) {
    return trial_dir(run_dir, trial) / fill(kTrialInputs, rank, trial);
}

fs::path trace_dir(const fs::path& run_dir) {
    return run_dir / kTraceDir;
}

fs::path engine_trace(const fs::path& folder, int rank) {
    return folder / fill(kEngineTrace, rank);
}

fs::path runs_dir_of_store(const fs::path& store_file) {
    return store_file.parent_path() / kRunsDir;
}

std::string calibration_file_name(int world_size) {
    std::string text(kCalibration);
    replace(text, "{world}", std::to_string(world_size));
    return text;
}

} // namespace pkbw::run_layout
