// The rank side of `pkbw perf`: times reference and candidate in this process after correctness,
// with PKB's protocol (as-is, for the PKB-compatible figure) and pkbw's (ranks aligned per block,
// ABBA alternation, every input rotated past 3x L2 or an explicit flush), and reports every sample.
#pragma once

#include "device.h"
#include "event_sink.h"
#include "pkbw/core/problem.h"
#include "shared_buffers.h"
#include "solution_library.h"
#include "timing.h"

#include <functional>
#include <memory>
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

// Copies of the inputs (set k of the rotation) and one set of outputs, in memory shared with the
// candidate process, with the views a call needs for each set.
class TimingBuffers {
public:
    TimingBuffers(SharedBuffers& shared, const std::vector<TensorSpec>& input_specs,
                  const std::vector<Tensor>& host_inputs, const std::vector<TensorSpec>& output_specs,
                  int copies, bool rotate_first_only);
    ~TimingBuffers();
    TimingBuffers(const TimingBuffers&) = delete;
    TimingBuffers& operator=(const TimingBuffers&) = delete;

    int copies() const { return static_cast<int>(input_views_.size()); }
    const std::vector<TensorView>& inputs(int copy) const {
        return input_views_[static_cast<std::size_t>(copy)];
    }
    const std::vector<TensorView>& outputs() const { return output_views_; }
    const std::vector<TensorSpec>& output_specs() const { return output_specs_; }

private:
    SharedBuffers& shared_;
    std::vector<TensorSpec> input_specs_, output_specs_;
    std::vector<void*> owned_, outputs_;
    std::vector<std::vector<TensorView>> input_views_;
    std::vector<TensorView> output_views_;
};

// One side to time, wherever its calls run: in this process (the reference, the bare NCCL loop) or
// in the candidate process. `extra` gathers what the block's perf_result event carries besides the
// samples (the bracket, and for the candidate process its CPU after returning).
class TimedSide {
public:
    virtual ~TimedSide() = default;
    virtual BlockTiming pkb_series(int warmup, int iterations, nlohmann::json& extra) = 0;
    virtual BlockTiming pkbw_block(int iterations, int repeat, bool flush, int& next_copy,
                                   nlohmann::json& extra) = 0;
};

// The block's bracket as a perf_result event carries it: span_ms, host_ms, calls.
void add_bracket(nlohmann::json& extra, const BlockTiming& timing);

// A side timed in this process: `library` called with `session`'s services.
std::unique_ptr<TimedSide> make_local_side(const PerfContext& context, const SolutionLibrary& library,
                                           SolutionSession& session, const TimingBuffers& buffers);

struct PerfSides {
    // Absent sides are empty functions.
    std::function<std::unique_ptr<TimedSide>(const TimingBuffers&)> reference, candidate;
    // After the timed blocks, with their buffers alive (the re-check at the timed addresses).
    std::function<void(TimingBuffers&)> after_timing;
};

// Times the sides that are present and sends `perf_result` events.
void run_perf(const PerfContext& context, const PerfOptions& options, const PerfSides& sides,
              SharedBuffers& shared);

// `pkbw calibrate`: bare NCCL allreduce/allgather busbw and peer-copy bandwidth over `sizes`.
void run_calibration(const PerfContext& context, const std::vector<std::size_t>& sizes, int iterations);

} // namespace pkbw::engine
