// Fresh inputs for pkbw's timed calls (docs/perf.md, "Every timed call is a checked call"): each call
// of each block reads a set of its own, drawn by the problem's own generator from a seed the judges
// choose at run time and never give the candidate, and kept in the judge's own memory (not shared)
// until the block that reads it is about to start.
#pragma once

#include "device.h"
#include "pkbw/core/problem.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pkbw::engine {

// Trial numbers of the timed inputs start here: far from any eval trial.
inline constexpr int kTimingTrialBase = 1 << 24;

// The configuration of timed input set `index`.
ProblemConfig timing_config(const ProblemConfig& base, std::uint64_t secret_seed, InputMode mode, int index);

// Whether two draws of this rank's inputs (different trials, the secret seed) are byte for byte the
// same: PKB's inputs for problems 1-8 are constants, and fresh draws of a constant are no defence.
bool inputs_repeat(const Problem& problem, const ProblemConfig& base, int rank, std::uint64_t secret_seed,
                   InputMode mode);

class TimingInputs {
public:
    // Draws `sets` input sets on up to `threads` threads and keeps them in device memory of the judge's.
    // Throws pkbw::Error when the problem's shapes differ between trials.
    TimingInputs(Device& device, const Problem& problem, const ProblemConfig& base, int rank,
                 std::uint64_t secret_seed, InputMode mode, int sets, int threads);
    ~TimingInputs();
    TimingInputs(const TimingInputs&) = delete;
    TimingInputs& operator=(const TimingInputs&) = delete;

    int sets() const { return sets_; }
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
    Device& device_;
    int sets_ = 0;
    std::size_t set_bytes_ = 0;
    std::vector<TensorSpec> specs_;
    std::vector<std::size_t> offsets_;
    std::vector<ProblemConfig> configs_;
    std::vector<TieRowsByOutput> tie_rows_;
    void* staging_ = nullptr;
};

// Rounds up to the 256-byte alignment cudaMalloc gives (every slot tensor starts aligned).
inline std::size_t aligned_bytes(std::size_t bytes) {
    return (bytes + 255) / 256 * 256;
}

} // namespace pkbw::engine
