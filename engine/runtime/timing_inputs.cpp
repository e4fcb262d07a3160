#include "timing_inputs.h"

#include "pkbw/core/error.h"
#include "rendezvous.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <span>
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

namespace {

std::size_t set_bytes_of(const std::vector<TensorSpec>& specs) {
    std::size_t bytes = 0;
    for (const auto& spec : specs) {
        bytes += aligned_bytes(static_cast<std::size_t>(shape_numel(spec.shape)) * dtype_size(spec.dtype));
    }
    return bytes;
}

// Whether any rank says `mine`.
bool any_rank(Rendezvous& judges, bool mine) {
    const std::uint8_t value = mine ? 1 : 0;
    for (const auto& part : judges.all_gather(std::as_bytes(std::span(&value, 1)))) {
        if (std::to_integer<std::uint8_t>(part[0]) != 0) {
            return true;
        }
    }
    return false;
}

int min_over_ranks(Rendezvous& judges, int mine) {
    const std::int32_t value = mine;
    std::int32_t least = value;
    for (const auto& part : judges.all_gather(std::as_bytes(std::span(&value, 1)))) {
        std::int32_t other = 0;
        std::memcpy(&other, part.data(), sizeof other);
        least = std::min(least, other);
    }
    return least;
}

std::uint64_t seed_of_rank_zero(Rendezvous& judges, int rank) {
    std::uint64_t seed = 0;
    if (rank == 0) {
        std::random_device device;
        seed = (static_cast<std::uint64_t>(device()) << 32) ^ device();
    }
    const auto all = judges.all_gather(std::as_bytes(std::span(&seed, 1)));
    std::memcpy(&seed, all[0].data(), sizeof seed);
    return seed;
}

constexpr double kHostMemoryBudget = 512.0 * (1 << 20); // per rank, under the host backend's RLIMIT_AS

} // namespace

TimingAgreement agree_on_timing(Rendezvous& judges, const Problem& problem, const ProblemConfig& base, int rank,
                                const TimingRequest& request) {
    TimingAgreement agreed;
    agreed.cold = request.cold;
    const std::size_t input_bytes = set_bytes_of(problem.input_specs(base, rank));
    const std::size_t output_bytes = set_bytes_of(problem.output_specs(base, rank));
    const double budget = request.memory_bytes == 0
                              ? kHostMemoryBudget
                              : request.memory_fraction * static_cast<double>(request.memory_bytes);
    agreed.plan = plan_checked_timing(input_bytes, output_bytes, static_cast<std::size_t>(budget), request.calls,
                                      request.pairs, request.graph_pairs);
    // Every rank must make the same number of calls: their calls may be collectives.
    const int calls = min_over_ranks(judges, agreed.plan.calls_per_block);
    if (calls != agreed.plan.calls_per_block) {
        CheckedTimingPlan& plan = agreed.plan;
        plan.calls_per_block = calls; // never more than a rank could hold, whatever L2 asks
        plan.staging_bytes = (static_cast<std::size_t>(plan.groups()) + 1) * calls * input_bytes;
        plan.slot_bytes = static_cast<std::size_t>(calls) * (input_bytes + 2 * output_bytes);
        plan.reason += "; " + std::to_string(calls) + " on every rank (the fewest any rank could hold)";
    }
    agreed.seed = seed_of_rank_zero(judges, rank);
    agreed.mode = base.input_mode;
    if (any_rank(judges, inputs_repeat(problem, base, rank, agreed.seed, agreed.mode))) {
        if (agreed.mode == InputMode::Pkb) {
            agreed.mode = InputMode::Exact;
            agreed.info = "PKB's inputs for this problem are the same every call: the timed calls read exact-mode "
                          "draws instead (same shapes and dtypes)";
        }
        if (any_rank(judges, inputs_repeat(problem, base, rank, agreed.seed, agreed.mode))) {
            agreed.note = "this problem's inputs are the same every call: a candidate that caches its result by "
                          "content cannot be told from one that computes";
        }
    }
    return agreed;
}

TimingInputs::TimingInputs(const Problem& problem, const ProblemConfig& base, int rank,
                           const TimingAgreement& agreement, int threads)
    : agreement_(agreement)
    , sets_((agreement.plan.groups() + 1) * agreement.plan.calls_per_block) {
    specs_ = problem.input_specs(base, rank);
    for (const auto& spec : specs_) {
        offsets_.push_back(set_bytes_);
        set_bytes_ += aligned_bytes(static_cast<std::size_t>(shape_numel(spec.shape)) * dtype_size(spec.dtype));
    }
    for (int i = 0; i < sets_; ++i) {
        configs_.push_back(timing_config(base, agreement.seed, agreement.mode, i));
    }
    // Every timed call shares one slot layout, so no trial may change a shape: every set is checked (a
    // problem whose shapes change every few trials, such as 85's empty ranks, passed a check of the
    // first and last set while the sets between were drawn into slots of another shape).
    const auto base_outputs = problem.output_specs(base, rank);
    for (int i = 0; i < sets_; ++i) {
        const auto& config = configs_[static_cast<std::size_t>(i)];
        if (!same_shapes(problem.input_specs(config, rank), specs_) ||
            !same_shapes(problem.output_specs(config, rank), base_outputs)) {
            throw Error("problem " + problem.info().stem + ": its shapes differ between trials (timed set " +
                        std::to_string(i) + "), and pkbw's timing needs one shape for every call");
        }
    }
    tie_rows_.resize(static_cast<std::size_t>(sets_));
    drawn_.resize(set_bytes_ * static_cast<std::size_t>(sets_));
    drawing_ = std::thread([this, &problem, rank, threads] { draw(problem, rank, threads); });
}

// In waves of `threads` sets on as many threads, into host memory: the device's context stays the
// rank's main thread's, and upload() copies the whole staging at once.
void TimingInputs::draw(const Problem& problem, int rank, int threads) {
    const int wave = std::max(threads, 1);
    std::vector<std::string> failures(static_cast<std::size_t>(wave));
    for (int first = 0; first < sets_ && failure_.empty() && !cancelled_; first += wave) {
        const int count = std::min(wave, sets_ - first);
        std::vector<std::thread> workers;
        for (int w = 0; w < count; ++w) {
            workers.emplace_back([&, w] {
                const auto index = static_cast<std::size_t>(first + w);
                try {
                    const auto tensors = problem.build_inputs(configs_[index], rank);
                    if (tensors.size() != specs_.size()) {
                        throw Error("set " + std::to_string(index) + " drew " + std::to_string(tensors.size()) +
                                    " inputs for " + std::to_string(specs_.size()) + " slots");
                    }
                    for (std::size_t t = 0; t < tensors.size(); ++t) {
                        const std::size_t slot = (t + 1 < offsets_.size() ? offsets_[t + 1] : set_bytes_) - offsets_[t];
                        if (tensors[t].nbytes() > slot) {
                            throw Error("set " + std::to_string(index) + " drew input " + std::to_string(t) +
                                        " of " + std::to_string(tensors[t].nbytes()) + " bytes for a slot of " +
                                        std::to_string(slot));
                        }
                    }
                    tie_rows_[index] = problem.checked_tie_rows(configs_[index], rank, tensors);
                    std::byte* set = drawn_.data() + set_bytes_ * index;
                    for (std::size_t t = 0; t < tensors.size(); ++t) {
                        std::memcpy(set + offsets_[t], tensors[t].data(), tensors[t].nbytes());
                    }
                } catch (const std::exception& error) {
                    failures[static_cast<std::size_t>(w)] = error.what();
                }
            });
        }
        for (auto& worker : workers) {
            worker.join();
        }
        for (const auto& failure : failures) {
            if (!failure.empty() && failure_.empty()) {
                failure_ = failure;
            }
        }
    }
}

void TimingInputs::upload(Device& device) {
    if (drawing_.joinable()) {
        drawing_.join();
    }
    if (!failure_.empty()) {
        throw Error("drawing timed inputs: " + failure_);
    }
    if (staging_ != nullptr) {
        return;
    }
    device_ = &device;
    staging_ = device_->allocate(std::max<std::size_t>(drawn_.size(), 1));
    if (!drawn_.empty()) {
        device_->upload(staging_, drawn_.data(), drawn_.size());
    }
    device_->synchronize();
    std::vector<std::byte>().swap(drawn_);
}

TimingInputs::~TimingInputs() {
    cancelled_ = true;
    if (drawing_.joinable()) {
        drawing_.join();
    }
    if (staging_ != nullptr) {
        device_->release(staging_);
    }
}

void TimingInputs::load(int first, int count, void* destination) const {
    if (first < 0 || count < 0 || first + count > sets_ || staging_ == nullptr) {
        throw Error("timed input sets " + std::to_string(first) + ".." + std::to_string(first + count) +
                    " are not there");
    }
    device_->copy_async(destination,
                       static_cast<const std::byte*>(staging_) + set_bytes_ * static_cast<std::size_t>(first),
                       set_bytes_ * static_cast<std::size_t>(count));
}

} // namespace pkbw::engine
