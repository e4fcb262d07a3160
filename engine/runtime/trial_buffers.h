// A trial's tensors on the rank's device, in memory shared with the candidate process: inputs (with a
// pristine host copy, to detect a solution that modifies them) and outputs surrounded by guard regions (to
// detect writes past either end).
#pragma once

#include "device.h"
#include "pkbw/core/outputs.h"
#include "pkbw/core/problem.h"
#include "shared_buffers.h"

#include <string>
#include <vector>

namespace pkbw::engine {

inline constexpr std::size_t kGuardBytes = 4096;
inline constexpr std::uint8_t kGuardByte = 0xA5;
// Outputs are filled with 0xFF before each call: NaN in every float type and -1 in integers, so an
// element a solution never wrote cannot pass by accident.
inline constexpr std::uint8_t kPoisonByte = 0xFF;

struct GuardViolation {
    std::string output;
    bool before = false;    // in the guard before the output (else after)
    std::size_t offset = 0; // bytes from the output's start (before) or end (after) of the first bad byte
    std::size_t count = 0;  // bytes changed in that guard
    std::string describe() const;
};

class TrialBuffers {
public:
    TrialBuffers(SharedBuffers& shared, const std::vector<TensorSpec>& input_specs,
                 std::vector<Tensor> host_inputs, const std::vector<TensorSpec>& output_specs);
    ~TrialBuffers();
    TrialBuffers(const TrialBuffers&) = delete;
    TrialBuffers& operator=(const TrialBuffers&) = delete;

    // Restores inputs from the pristine copy, poisons outputs and re-arms the guards.
    void prepare();
    const std::vector<TensorView>& input_views() const { return input_views_; }
    const std::vector<TensorView>& output_views() const { return output_views_; }
    // The output length slots (ABI Context::output_lengths), or null when no output is variable-length.
    std::int64_t* output_lengths() const { return static_cast<std::int64_t*>(lengths_memory_); }

    // Each output as compared: a variable-length one is only its reported prefix (the tail is not read),
    // with the bound and the length as reported (OutputLength).
    OutputSet download_outputs();
    std::vector<GuardViolation> check_guards();
    // Names of the inputs whose bytes differ from the pristine copy, with the count of bytes changed.
    std::vector<std::string> changed_inputs();
    // What each output's length slot holds now (0 for every output when none is variable-length).
    std::vector<std::int64_t> reported_lengths();

private:
    SharedBuffers& shared_;
    Device& device_;
    std::vector<Tensor> host_inputs_;
    std::vector<TensorSpec> output_specs_;
    std::vector<void*> input_memory_;
    std::vector<void*> output_memory_; // guard + data + guard
    void* lengths_memory_ = nullptr;   // one int64 per output, when any output is variable-length
    std::vector<TensorView> input_views_;
    std::vector<TensorView> output_views_;
    std::vector<std::string> names_; // storage for TensorView::name
};

} // namespace pkbw::engine
