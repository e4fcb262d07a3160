#include "recorder.h"

namespace pkbw::cli {

std::int64_t MemoryRecorder::begin_run(const RunStart& run) {
    std::int64_t id = runs.empty() ? 1 : runs.rbegin()->first + 1;
    runs[id].start = run;
    return id;
}

void MemoryRecorder::set_environment(std::int64_t run_id, const RunEnvironment& environment) {
    runs.at(run_id).environment = environment;
}

void MemoryRecorder::add_rank_result(std::int64_t run_id, const RankRecord& record) {
    runs.at(run_id).ranks.push_back(record);
}

void MemoryRecorder::add_tensor_result(std::int64_t run_id, const TensorRecord& record) {
    runs.at(run_id).tensors.push_back(record);
}

void MemoryRecorder::add_artifact(std::int64_t run_id, const ArtifactRecord& record) {
    runs.at(run_id).artifacts.push_back(record);
}

void MemoryRecorder::add_perf_samples(std::int64_t run_id, const std::string&, int, int,
                                      const std::vector<double>& samples) {
    runs.at(run_id).perf_samples += samples.size();
}

void MemoryRecorder::add_perf_summary(std::int64_t run_id, const std::string& side, int rank,
                                      const std::string& statistic, double value) {
    runs.at(run_id).perf_summaries[side + "/" + std::to_string(rank) + "/" + statistic] = value;
}

void MemoryRecorder::add_traces(std::int64_t run_id, const std::vector<RankTrace>& traces) {
    for (const auto& trace : traces)
        runs.at(run_id).trace_events += trace.events.size();
}

void MemoryRecorder::archive(std::int64_t run_id, const ArchiveRecord& record) {
    runs.at(run_id).archived.push_back(record);
}

void MemoryRecorder::finish_run(std::int64_t run_id, const std::string& status, int exit_code,
                                const std::string& summary) {
    auto& run = runs.at(run_id);
    run.status = status;
    run.exit_code = exit_code;
    run.summary = summary;
}

} // namespace pkbw::cli
