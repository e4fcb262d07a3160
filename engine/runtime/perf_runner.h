// The rank side of `pkbw perf`: times reference and candidate after correctness with pkbw's protocol
// (checked_timing.h: every timed call checked, every time the judge's clock) and PKB's (as-is, measured
// inside each side's worker process, for the PKB-compatible figure), and reports every block.
#pragma once

#include "device.h"
#include "event_sink.h"
#include "pkbw/core/perf_defaults.h"
#include "pkbw/core/problem.h"
#include "shared_buffers.h"
#include "timing.h"

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace pkbw::engine {

class Rendezvous;

// The defaults are the run contract's (pkbw/core/perf_defaults.h).
struct PerfOptions {
    bool pkb = perf_defaults::kPerfPkb; // PKB's protocol
    int pkb_warmup = perf_defaults::kPerfPkbWarmup;
    int pkb_iterations = perf_defaults::kPerfPkbIterations;
    bool pkbw = perf_defaults::kPerfPkbw;            // pkbw's protocol
    int warmup = perf_defaults::kPerfWarmup;         // calls per side, before the first block
    int pairs = perf_defaults::kPerfPairs;           // ABBA: `pairs` blocks of each side
    int iterations = perf_defaults::kPerfIterations; // calls per block (raised until inputs span 3x L2)
    // copies (fresh inputs spanning 3x L2) | none (as asked, maybe cached)
    std::string rotation = std::string(perf_defaults::kPerfRotation);
    bool bare_nccl = false; // also time a bare ncclAllReduce/AllGather of the problem's first input
    double rotation_memory_fraction = perf_defaults::kPerfRotationMemoryFraction; // timed inputs' memory cap
    // Which of a perf run's independent launches this is (docs/perf.md "Replication"): its seed sets
    // which side is timed first and where each side's buffers lie, so that what a process fixes for
    // its life varies from launch to launch.
    int launch_index = 0;
    std::uint64_t launch_seed = 0;
    bool reference_first = true; // the side timed (and warmed) first; the launcher alternates it
    // After the launched blocks, `pairs` more of each side with its block's calls captured once into a
    // CUDA graph and replayed (docs/perf.md "The graph figure"); the cuda backend only.
    bool graph = true;
};

// Reads the "perf" object of the rank configuration (absent fields keep their defaults).
PerfOptions parse_perf_options(const nlohmann::json& perf, const std::string& source);

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
    // Length slots for variable-length outputs (written by every call, never read: PKB's series checks
    // nothing); null when no output is variable.
    std::int64_t* output_lengths() const { return static_cast<std::int64_t*>(lengths_); }

private:
    SharedBuffers& shared_;
    std::vector<TensorSpec> input_specs_, output_specs_;
    std::vector<void*> owned_, outputs_;
    std::vector<std::vector<TensorView>> input_views_;
    std::vector<TensorView> output_views_;
    void* lengths_ = nullptr;
};

struct TimedWorker;      // checked_timing.h
struct ThreadScheduling; // scheduling_guard.h
struct CpuPlacement;     // cpu_placement.h
class TimingInputs;      // timing_inputs.h

// The sides present in a perf run: each side's worker process (the candidate's is frozen outside its
// own blocks).
struct PerfWorkers {
    TimedWorker* reference = nullptr;
    TimedWorker* candidate = nullptr;
    double atol = kPkbTolerance,
           rtol = kPkbTolerance;    // the run's tolerance, for the check of every timed call
    TimingInputs* inputs = nullptr; // pkbw's protocol: the timed calls' inputs (start_timing_inputs)
    const ThreadScheduling* scheduling = nullptr; // the judge's, before its workers (scheduling_guard.h)
    const CpuPlacement* placement = nullptr;      // where the judge and workers run (cpu_placement.h)
};

// Agrees with the other judges on pkbw's timed blocks and starts drawing their inputs in the
// background (timing_inputs.h): called as soon as the judges have met, before the devices and the
// workers start, so that the drawing overlaps their start and the eval's trials. Collective over the
// judges. `memory_bytes`: the device's (0 on the host backend); `graphs`: the device can replay CUDA
// graphs (the cuda backend), so the graph figure gets input sets of its own. Null when pkbw's protocol
// is off.
std::unique_ptr<TimingInputs> start_timing_inputs(Rendezvous& judges, const Problem& problem,
                                                  const ProblemConfig& config, int rank,
                                                  const PerfOptions& options, std::size_t memory_bytes,
                                                  bool graphs);

// Times the sides that are present and sends their events (perf_result, timing_plan, timed_check,
// perf_progress).
void run_perf(const PerfContext& context, const PerfOptions& options, const PerfWorkers& workers,
              SharedBuffers& shared);

// `pkbw calibrate`: bare NCCL allreduce/allgather busbw and peer-copy bandwidth over `sizes`.
void run_calibration(const PerfContext& context, const std::vector<std::size_t>& sizes, int iterations);

} // namespace pkbw::engine
