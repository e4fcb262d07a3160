// Variable-length outputs in pkbw's timed calls (docs/perf.md "Variable-length outputs"): each call of a
// block has its own length slots beside its output slot, reset before the block and compared after it,
// so a candidate that reports a shorter length to skip work in a timed call is caught as in a trial.
#pragma once

#include "device.h"
#include "pkbw/core/problem.h"
#include "timing_slots.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pkbw::engine {

// What the two sides' lengths say of each call of a block.
struct TimedLengthCheck {
    std::vector<std::string> messages;           // per call: "" when every variable length agrees
    std::vector<std::vector<std::int64_t>> rows; // per call, per output: the rows to compare
};

class TimedLengths {
public:
    // Null when no output of `specs` is variable-length (nothing to keep).
    static std::unique_ptr<TimedLengths> make(SharedBuffers& shared, const std::vector<TensorSpec>& specs,
                                              int calls);
    std::int64_t* slot(int call) const;
    // Before a block: variable outputs "not reported", fixed ones their full length.
    void reset(Device& device) const;
    // After a pair of blocks: the candidate's lengths against the reference's, call by call. Either side
    // may be null (no variable output): every output's rows are then its full leading dimension.
    static TimedLengthCheck check(const TimedLengths* reference, const TimedLengths* candidate,
                                  Device& device, const std::vector<TensorSpec>& specs, int calls);

private:
    TimedLengths(SharedBuffers& shared, std::vector<TensorSpec> specs, int calls);
    std::vector<std::int64_t> read(Device& device) const;

    std::vector<TensorSpec> specs_;
    int calls_;
    SharedSlots slots_;
};

} // namespace pkbw::engine
