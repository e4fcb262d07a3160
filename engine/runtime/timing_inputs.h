// Fresh inputs for pkbw's timed calls (docs/perf.md, "Every timed call is a checked call"): each call
// of each block reads a set of its own, drawn by the problem's own generator from a seed the judges
// choose at run time and never give the candidate, and kept in the judge's own memory (not shared)
// until the block that reads it is about to start.
#pragma once

#include "device.h"
#include "pkbw/core/problem.h"
#include "pkbw/core/timing_checks.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace pkbw::engine {

// Trial numbers of the timed inputs start here: far from any eval trial.
inline constexpr int kTimingTrialBase = 1 << 24;
// The search for timed draws of one shape looks at most this many draws per set it needs.
inline constexpr int kTimingDrawsPerSet = 64;

// The configuration of timed draw `draw` (trial kTimingTrialBase + draw).
ProblemConfig timing_config(const ProblemConfig& base, std::uint64_t secret_seed, InputMode mode, int draw);

// Which of timed draws [first, first + count) give this rank inputs, and outputs' bounds, of the shapes
// of `base` (the eval's first trial: the shapes the timed slots are laid out in).
std::vector<bool> draws_of_base_shape(const Problem& problem, const ProblemConfig& base, int rank,
                                      std::uint64_t secret_seed, InputMode mode, int first, int count);

// The first `sets` timed draws that every rank can read in its slots (docs/perf.md, "Every timed call is
// a checked call"): 0, 1, 2, ... where the shapes never change with the trial; where they do (70's
// lengths, 81's counts, 85's empty ranks), the draws of another shape on any rank are skipped.
// `agreed(first, count)` answers, for draws [first, first + count), whether every rank's shapes are
// its base's (the AND of every rank's draws_of_base_shape). Looks at kTimingDrawsPerSet x sets draws
// at most; throws pkbw::Error naming the problem when fewer have the shapes.
std::vector<int> one_shape_draws(const std::string& stem, int sets,
                                 const std::function<std::vector<bool>(int first, int count)>& agreed);

// Whether two draws of this rank's inputs (different trials, the secret seed) are byte for byte the
// same: PKB's inputs for problems 1-8 are constants, and fresh draws of a constant are no defence.
bool inputs_repeat(const Problem& problem, const ProblemConfig& base, int rank, std::uint64_t secret_seed,
                   InputMode mode);

// What every rank agreed for the timed blocks, before the first: the plan (calls per block, pairs), the
// secret seed and the inputs' mode.
struct TimingAgreement {
    CheckedTimingPlan plan;
    bool cold = true; // every call reads its inputs from device memory (the judge flushes L2 first)
    std::uint64_t seed = 0;
    InputMode mode = InputMode::Pkb;
    std::vector<int> draws; // the timed sets' draws (one_shape_draws), the same on every rank
    std::string note;       // a limit of the check (the run warns)
    std::string info;       // what the inputs are (the report says it)
};

// What drawing the timed sets may take, in seconds of one drawing thread as measured alone
// (calls_drawn_in_time). The blocks cannot start before every set is drawn, and the perf phase says
// nothing while it waits: problem 60's generator (a float64 rfft2 of 20 fields of 720 x 1440, 3-5 s a
// set on one core) at the 32 calls its memory held asked for 352 sets, minutes of silence after PKB's
// series on a 16-core H200 host (problem 59's 429 sets of 0.6 s took about 50 s there: 16 threads at
// once drew each about 3x slower than one alone), and a batch that waited 60 s took the run for hung.
inline constexpr double kTimedDrawSeconds = 20;
// The fewest calls a block is lowered to for the drawing's time (memory may lower it further).
inline constexpr int kMinCallsForDrawTime = 8;

// The calls per block whose sets (`sets_per_call` each: CheckedTimingPlan::groups() + 1) `threads`
// threads draw in about `budget_seconds`, one set taking `seconds_per_set` on a thread alone: `calls`
// where they fit or where nothing was measured, else fewer, never below kMinCallsForDrawTime (nor
// above `calls`).
int calls_drawn_in_time(int calls, int sets_per_call, double seconds_per_set, int threads,
                        double budget_seconds);

// How many calls, and how much memory, the perf options ask for (perf_runner.h's PerfOptions).
struct TimingRequest {
    int calls = 50;
    int pairs = 10;
    int graph_pairs = 0;                     // CheckedTimingPlan::graph_pairs
    bool cold = true;                        // write 3x L2 after loading a block's inputs (--rotation copies)
    double memory_fraction = 0.25;           // of device memory, for staging and slots
    std::size_t memory_bytes = 0;            // the device's (0: the host backend's fixed budget)
    int threads = 1;                         // TimingInputs' drawing threads
    double draw_seconds = kTimedDrawSeconds; // calls_drawn_in_time's budget
};

class Rendezvous;

// Collective over the judges: the plan (the fewest calls any rank can hold, whose sets it draws in
// about request.draw_seconds: the two draws that tell whether the inputs repeat are timed), the seed
// rank 0 draws, the inputs' mode (exact-mode draws where PKB's repeat), the draws of one shape (throws
// pkbw::Error naming the problem where too few have it). Needs no device: it runs before the devices
// and the workers start, so that the drawing overlaps their start and the eval's trials.
TimingAgreement agree_on_timing(Rendezvous& judges, const Problem& problem, const ProblemConfig& base,
                                int rank, const TimingRequest& request);

class TimingInputs {
public:
    // Starts drawing (groups + 1) x calls input sets (the agreement's draws) on threads of its own, into
    // host memory, so that the drawing overlaps the eval's trials; upload() waits for it.
    TimingInputs(const Problem& problem, const ProblemConfig& base, int rank,
                 const TimingAgreement& agreement, int threads);
    ~TimingInputs();
    TimingInputs(const TimingInputs&) = delete;
    TimingInputs& operator=(const TimingInputs&) = delete;

    const TimingAgreement& agreement() const { return agreement_; }
    // Waits for the drawing and moves the sets into the judge's device memory (the staging), which it
    // releases before `device` goes. Throws pkbw::Error naming the problem when a draw failed.
    void upload(Device& device);

    int sets() const { return sets_; }
    // Wall seconds the drawing took, and how long upload() waited for it (the part the eval's trials did
    // not hide: all of it in a perf run's later launches, which run no trials). Read after upload().
    double draw_seconds() const { return draw_seconds_; }
    double wait_seconds() const { return wait_seconds_; }
    // Bytes of one set, each tensor 256-byte aligned (the layout of staging and of the input slots).
    std::size_t set_bytes() const { return set_bytes_; }
    const std::vector<TensorSpec>& specs() const { return specs_; }
    const std::vector<std::size_t>& offsets() const { return offsets_; }
    // Queues a copy of sets [first, first + count) to `destination`, count x set_bytes() of device
    // memory laid out as the staging (set after set).
    void load(int first, int count, void* destination) const;
    // The set's tie rows (Problem::checked_tie_rows), for the check of the call that read it.
    const TieRowsByOutput& tie_rows(int index) const { return tie_rows_.at(static_cast<std::size_t>(index)); }
    const ProblemConfig& config(int index) const { return configs_.at(static_cast<std::size_t>(index)); }

private:
    void draw(const Problem& problem, int rank, int threads);
    std::size_t drawn_bytes() const { return set_bytes_ * static_cast<std::size_t>(sets_); }

    Device* device_ = nullptr; // from upload()
    TimingAgreement agreement_;
    int sets_ = 0;
    std::size_t set_bytes_ = 0;
    std::vector<TensorSpec> specs_;
    std::vector<std::size_t> offsets_;
    std::vector<ProblemConfig> configs_;
    std::vector<TieRowsByOutput> tie_rows_;
    std::unique_ptr<std::byte[]> drawn_; // host memory (drawn_bytes()), until upload()
    std::string failure_;                // of the drawing
    std::atomic<bool> cancelled_{false}; // the run ends before its perf phase: stop drawing
    std::thread drawing_;
    double draw_seconds_ = 0; // written by the drawing thread, read after its join
    double wait_seconds_ = 0;
    void* staging_ = nullptr;
};

// Rounds up to the 256-byte alignment cudaMalloc gives (every slot tensor starts aligned).
inline std::size_t aligned_bytes(std::size_t bytes) {
    return (bytes + 255) / 256 * 256;
}

} // namespace pkbw::engine
