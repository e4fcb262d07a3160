// Variable-length outputs in gpu_smoke (docs/solution-abi.md "Variable-length outputs"), provided as the
// engine's judge provides them (engine/runtime/trial_buffers.cpp, solution_library.cpp): one int64 slot per
// output in the backend's memory (device memory for the cuda side, host memory for the host oracle), or
// none when no output is variable; before every call a variable output's slot is -1 (not reported) and a
// fixed one's its shape[0]; after the call only the reported prefix of a variable output is compared.
#pragma once

#include "pkbw/core/problem.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <optional>
#include <string>
#include <vector>

namespace gpu_smoke {

inline constexpr std::int64_t kLengthNotReported = -1;

inline std::int64_t leading_dimension(const pkbw::TensorSpec& spec) {
    return spec.shape.empty() ? 1 : spec.shape[0];
}

// One context's length slots (Context::output_lengths). Owns its memory.
class LengthSlots {
public:
    LengthSlots(const std::vector<pkbw::TensorSpec>& specs, bool host)
        : host_(host)
        , specs_(specs) {
        bool variable = false;
        for (const auto& spec : specs) {
            variable = variable || spec.variable_length;
            initial_.push_back(spec.variable_length ? kLengthNotReported : leading_dimension(spec));
        }
        if (!variable)
            return;
        const std::size_t bytes = sizeof(std::int64_t) * initial_.size();
        if (host_) {
            slots_ = static_cast<std::int64_t*>(std::malloc(bytes));
        } else if (cudaMalloc(&slots_, bytes) != cudaSuccess) {
            std::fprintf(stderr, "gpu_smoke: cudaMalloc of %zu bytes of length slots failed\n", bytes);
            std::exit(3);
        }
    }
    LengthSlots(const LengthSlots&) = delete;
    LengthSlots& operator=(const LengthSlots&) = delete;
    ~LengthSlots() {
        if (slots_ == nullptr)
            return;
        if (host_)
            std::free(slots_);
        else
            cudaFree(slots_);
    }

    // Context::output_lengths: null when no output is variable.
    std::int64_t* slots() const { return slots_; }

    // Before every call: -1 for a variable output, shape[0] for a fixed one (in stream order on cuda).
    void reset(cudaStream_t stream) const {
        if (slots_ == nullptr)
            return;
        const std::size_t bytes = sizeof(std::int64_t) * initial_.size();
        if (host_)
            std::copy(initial_.begin(), initial_.end(), slots_);
        else
            cudaMemcpyAsync(slots_, initial_.data(), bytes, cudaMemcpyHostToDevice, stream);
    }

    // After the call has finished: the rows of output o to compare (shape[0] for a fixed output, whose slot
    // is never read), or -1 / an out-of-range value as reported.
    std::int64_t rows(std::size_t o) const {
        if (slots_ == nullptr || !specs_[o].variable_length)
            return leading_dimension(specs_[o]);
        std::int64_t value = kLengthNotReported;
        if (host_)
            value = slots_[o];
        else
            cudaMemcpy(&value, slots_ + o, sizeof value, cudaMemcpyDeviceToHost);
        return value;
    }

private:
    bool host_;
    std::vector<pkbw::TensorSpec> specs_;
    std::vector<std::int64_t> initial_;
    std::int64_t* slots_ = nullptr;
};

// Keeps the valid prefix of one output on both sides (rows_a and rows_b leading rows of `bound`), or says
// why there is nothing to compare: a length not reported, out of range, or different on the two sides
// (as the engine's comparison: "length 1056, the reference's 1039").
inline std::optional<std::string> trim_to_lengths(std::vector<std::byte>& a, std::int64_t rows_a,
                                                  std::vector<std::byte>& b, std::int64_t rows_b,
                                                  std::int64_t bound) {
    for (const std::int64_t rows : {rows_a, rows_b}) {
        if (rows < 0 || rows > bound)
            return "length " + std::to_string(rows) + (rows == kLengthNotReported ? " (not reported)" : "") +
                   " outside 0.." + std::to_string(bound);
    }
    if (rows_a != rows_b)
        return "length " + std::to_string(rows_b) + ", the reference's " + std::to_string(rows_a);
    const std::size_t row_bytes = bound > 0 ? a.size() / static_cast<std::size_t>(bound) : 0;
    a.resize(row_bytes * static_cast<std::size_t>(rows_a));
    b.resize(row_bytes * static_cast<std::size_t>(rows_b));
    return std::nullopt;
}

} // namespace gpu_smoke
