// Synthetic perf_result events and work models shared by the perf report's tests.
#pragma once

#include "perf_report.h"

#include <string>

namespace pkbw::cli::test {

inline WorkModel allreduce_of(double bytes) {
    WorkModel work;
    work.collective = CollectiveKind::AllReduce;
    work.collective_bytes = bytes;
    work.memory_bytes = 2 * bytes;
    return work;
}

// One block of one call-count with the judge's time of it (what the ranks send since the launches).
inline nlohmann::json judged_block(const std::string& side, int index, double device_call_ms, double judge_ms,
                                   int calls) {
    return {{"event", "perf_result"},         {"protocol", "pkbw"},   {"side", side},  {"block", index},
            {"samples_ms", {device_call_ms}}, {"judge_ms", judge_ms}, {"calls", calls}};
}

} // namespace pkbw::cli::test
