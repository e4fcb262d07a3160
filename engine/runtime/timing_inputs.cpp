#include "timing_inputs.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <cstring>
#include <thread>

namespace pkbw::engine {
namespace {

bool same_shapes(const std::vector<TensorSpec>& a, const std::vector<TensorSpec>& b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].dtype != b[i].dtype || a[i].shape != b[i].shape) {
            return false;
        }
    }
    return true;
}

} // namespace

ProblemConfig timing_config(const ProblemConfig& base, std::uint64_t secret_seed, InputMode mode, int index) {
    ProblemConfig config = base;
    config.seed = secret_seed;
    config.input_mode = mode;
    config.trial = kTimingTrialBase + index;
    return config;
}

bool inputs_repeat(const Problem& problem, const ProblemConfig& base, int rank, std::uint64_t secret_seed,
                   InputMode mode) {
    const auto first = problem.build_inputs(timing_config(base, secret_seed, mode, 0), rank);
    const auto second = problem.build_inputs(timing_config(base, secret_seed, mode, 1), rank);
    for (std::size_t i = 0; i < first.size(); ++i) {
        if (first[i].nbytes() != second[i].nbytes() ||
            std::memcmp(first[i].data(), second[i].data(), first[i].nbytes()) != 0) {
            return false;
        }
    }
    return true;
}

TimingInputs::TimingInputs(Device& device, const Problem& problem, const ProblemConfig& base, int rank,
                           std::uint64_t secret_seed, InputMode mode, int sets, int threads)
    : device_(device)
    , sets_(sets) {
    specs_ = problem.input_specs(base, rank);
    for (const auto& spec : specs_) {
        offsets_.push_back(set_bytes_);
        set_bytes_ += aligned_bytes(static_cast<std::size_t>(shape_numel(spec.shape)) * dtype_size(spec.dtype));
    }
    for (int i = 0; i < sets; ++i) {
        configs_.push_back(timing_config(base, secret_seed, mode, i));
    }
    // Every timed call shares one slot layout, so no trial may change a shape.
    for (int i : {0, sets - 1}) {
        if (sets > 0 && (!same_shapes(problem.input_specs(configs_[static_cast<std::size_t>(i)], rank), specs_) ||
                         !same_shapes(problem.output_specs(configs_[static_cast<std::size_t>(i)], rank),
                                      problem.output_specs(base, rank)))) {
            throw Error("problem " + problem.info().stem +
                        ": its shapes differ between trials, and pkbw's timing needs one shape for every call");
        }
    }
    staging_ = device_.allocate(std::max<std::size_t>(set_bytes_ * static_cast<std::size_t>(sets), 1));
    tie_rows_.resize(static_cast<std::size_t>(sets));
    // Drawn in waves of `threads` sets on as many threads, then uploaded from this thread (the device's
    // context is this thread's): host memory holds one wave, not every set.
    const int wave = std::max(threads, 1);
    std::vector<std::vector<Tensor>> drawn(static_cast<std::size_t>(wave));
    std::vector<std::string> failures(static_cast<std::size_t>(wave));
    for (int first = 0; first < sets; first += wave) {
        const int count = std::min(wave, sets - first);
        std::vector<std::thread> workers;
        for (int w = 0; w < count; ++w) {
            workers.emplace_back([&, w] {
                const auto index = static_cast<std::size_t>(first + w);
                try {
                    drawn[static_cast<std::size_t>(w)] = problem.build_inputs(configs_[index], rank);
                    tie_rows_[index] =
                        problem.checked_tie_rows(configs_[index], rank, drawn[static_cast<std::size_t>(w)]);
                } catch (const std::exception& error) {
                    failures[static_cast<std::size_t>(w)] = error.what();
                }
            });
        }
        for (auto& worker : workers) {
            worker.join();
        }
        for (int w = 0; w < count; ++w) {
            if (!failures[static_cast<std::size_t>(w)].empty()) {
                throw Error("drawing timed inputs: " + failures[static_cast<std::size_t>(w)]);
            }
            auto* set = static_cast<std::byte*>(staging_) + set_bytes_ * static_cast<std::size_t>(first + w);
            const auto& tensors = drawn[static_cast<std::size_t>(w)];
            for (std::size_t t = 0; t < tensors.size(); ++t) {
                if (tensors[t].nbytes() > 0) {
                    device_.upload(set + offsets_[t], tensors[t].data(), tensors[t].nbytes());
                }
            }
        }
    }
    device_.synchronize();
}

TimingInputs::~TimingInputs() {
    device_.release(staging_);
}

void TimingInputs::load(int first, int count, void* destination) const {
    if (first < 0 || count < 0 || first + count > sets_) {
        throw Error("timed input sets " + std::to_string(first) + ".." + std::to_string(first + count) +
                    " do not exist");
    }
    device_.copy_async(destination,
                       static_cast<const std::byte*>(staging_) + set_bytes_ * static_cast<std::size_t>(first),
                       set_bytes_ * static_cast<std::size_t>(count));
}

} // namespace pkbw::engine
