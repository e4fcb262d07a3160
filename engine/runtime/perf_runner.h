// The rank side of `pkbw perf`: times reference and candidate in this process after correctness,
// with PKB's protocol (as-is, for the PKB-compatible figure) and pkbw's (ranks aligned per block,
// ABBA alternation, every input rotated past 3x L2 or an explicit flush), and reports every sample.
#pragma once

#include "device.h"
#include "event_sink.h"
#include "pkbw/core/problem.h"
#include "solution_library.h"

#include <nlohmann/json.hpp>
#include <string>

namespace pkbw::engine {

class Rendezvous;

struct PerfOptions {
    bool pkb = true; // PKB's protocol
    int pkb_warmup = 500;
    int pkb_iterations = 100;
    bool pkbw = true;                // pkbw's protocol
    int warmup = 50;                 // per side, before the first block
    int pairs = 5;                   // ABBA: `pairs` blocks of each side
    int iterations = 100;            // per block
    std::string rotation = "copies"; // copies | flush | none
    double min_time_ms = 0;          // > 0: repeat calls inside one sample until it lasts this long
    bool bare_nccl = false;          // also time a bare ncclAllReduce/AllGather of the problem's first input
    double rotation_memory_fraction = 0.25; // cap on memory used for input copies
};

// Reads the "perf" object of the rank configuration (absent fields keep their defaults).
PerfOptions parse_perf_options(const nlohmann::json& perf, const std::string& source);
nlohmann::json to_json(const PerfOptions& options);

struct PerfContext {
    Device& device;
    Rendezvous& rendezvous;
    EventSink& events;
    int rank = 0;
    int local_rank = 0;
    const Problem* problem = nullptr; // null for calibration
    ProblemConfig config;
};

// Times the sides that are present (either may be null) and sends `perf_result` events.
void run_perf(const PerfContext& context, const PerfOptions& options, const SolutionLibrary* reference,
              SolutionSession* reference_session, const SolutionLibrary* candidate,
              SolutionSession* candidate_session);

// `pkbw calibrate`: bare NCCL allreduce/allgather busbw and peer-copy bandwidth over `sizes`.
void run_calibration(const PerfContext& context, const std::vector<std::size_t>& sizes, int iterations);

} // namespace pkbw::engine
