#include "timing_inputs.h"

#include "pkbw/core/error.h"
#include "rendezvous.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
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

ProblemConfig timing_config(const ProblemConfig& base, std::uint64_t secret_seed, InputMode mode, int draw) {
    ProblemConfig config = base;
    config.seed = secret_seed;
    config.input_mode = mode;
    config.trial = kTimingTrialBase + draw;
    return config;
}

std::vector<bool> draws_of_base_shape(const Problem& problem, const ProblemConfig& base, int rank,
                                      std::uint64_t secret_seed, InputMode mode, int first, int count) {
    const auto inputs = problem.input_specs(base, rank);
    const auto outputs = problem.output_specs(base, rank);
    std::vector<bool> fits;
    for (int draw = first; draw < first + count; ++draw) {
        const auto config = timing_config(base, secret_seed, mode, draw);
        fits.push_back(same_shapes(problem.input_specs(config, rank), inputs) &&
                       same_shapes(problem.output_specs(config, rank), outputs));
    }
    return fits;
}

std::vector<int> one_shape_draws(const std::string& stem, int sets,
                                 const std::function<std::vector<bool>(int first, int count)>& agreed) {
    const int limit = kTimingDrawsPerSet * sets;
    std::vector<int> draws;
    int first = 0;
    while (static_cast<int>(draws.size()) < sets && first < limit) {
        // Where no shape changes the first look is the last; where some do, look further in larger steps
        // (every look is a collective over the judges).
        const int missing = sets - static_cast<int>(draws.size());
        const int count = std::min(limit - first, first == 0 ? sets : std::max(2 * missing, 64));
        const auto fits = agreed(first, count);
        if (static_cast<int>(fits.size()) != count) {
            throw Error("problem " + stem + ": the judges' shapes of timed draws " + std::to_string(first) +
                        ".." + std::to_string(first + count) + " came back for " +
                        std::to_string(fits.size()));
        }
        for (int i = 0; i < count && static_cast<int>(draws.size()) < sets; ++i) {
            if (fits[static_cast<std::size_t>(i)]) {
                draws.push_back(first + i);
            }
        }
        first += count;
    }
    if (static_cast<int>(draws.size()) < sets) {
        throw Error(
            "problem " + stem + ": its shapes differ between trials, and only " +
            std::to_string(draws.size()) + " of the first " + std::to_string(limit) +
            " timed draws have the eval's first trial's shapes on every rank, where pkbw's timing needs " +
            std::to_string(sets) + " (one shape for every timed call)");
    }
    return draws;
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
        bytes += aligned_bytes(spec_bytes(spec));
    }
    return bytes;
}

// Which draws every rank says fit (the AND of the ranks' answers).
std::vector<bool> all_ranks(Rendezvous& judges, const std::vector<bool>& mine) {
    const std::vector<std::uint8_t> bytes(mine.begin(), mine.end());
    std::vector<bool> all = mine;
    for (const auto& part : judges.all_gather(std::as_bytes(std::span(bytes)))) {
        for (std::size_t i = 0; i < all.size() && i < part.size(); ++i) {
            all[i] = all[i] && std::to_integer<std::uint8_t>(part[i]) != 0;
        }
    }
    return all;
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

// Sets the plan's calls per block, with the staging and slots they take.
void set_calls(CheckedTimingPlan& plan, int calls, std::size_t input_bytes, std::size_t output_bytes,
               const std::string& why) {
    plan.calls_per_block = calls;
    plan.staging_bytes = (static_cast<std::size_t>(plan.groups()) + 1) * calls * input_bytes;
    plan.slot_bytes = static_cast<std::size_t>(calls) * (input_bytes + 2 * output_bytes);
    plan.reason += "; " + why;
}

} // namespace

int calls_drawn_in_time(int calls, int sets_per_call, double seconds_per_set, int threads,
                        double budget_seconds) {
    const double per_call = seconds_per_set * std::max(sets_per_call, 1) / std::max(threads, 1);
    if (!(per_call > 0) || !(budget_seconds > 0) || calls * per_call <= budget_seconds) {
        return calls;
    }
    const int fit = static_cast<int>(budget_seconds / per_call);
    return std::min(calls, std::max(fit, kMinCallsForDrawTime));
}

TimingAgreement agree_on_timing(Rendezvous& judges, const Problem& problem, const ProblemConfig& base,
                                int rank, const TimingRequest& request) {
    TimingAgreement agreed;
    agreed.cold = request.cold;
    agreed.seed = seed_of_rank_zero(judges, rank);
    agreed.mode = base.input_mode;
    // Whether the inputs repeat, told by two draws: what they take is what a set takes to draw.
    double seconds_per_set = 0;
    const auto repeats = [&](InputMode mode) {
        const auto start = std::chrono::steady_clock::now();
        const bool repeat = inputs_repeat(problem, base, rank, agreed.seed, mode);
        seconds_per_set = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 2;
        return any_rank(judges, repeat);
    };
    if (repeats(agreed.mode)) {
        if (agreed.mode == InputMode::Pkb) {
            agreed.mode = InputMode::Exact;
            agreed.info =
                "PKB's inputs for this problem are the same every call: the timed calls read exact-mode "
                "draws instead (same shapes and dtypes)";
        }
        if (repeats(agreed.mode)) {
            agreed.note =
                "this problem's inputs are the same every call: a candidate that caches its result by "
                "content cannot be told from one that computes";
        }
    }
    const std::size_t input_bytes = set_bytes_of(problem.input_specs(base, rank));
    const std::size_t output_bytes = set_bytes_of(problem.output_specs(base, rank));
    const double budget = request.memory_bytes == 0
                              ? kHostMemoryBudget
                              : request.memory_fraction * static_cast<double>(request.memory_bytes);
    agreed.plan = plan_checked_timing(input_bytes, output_bytes, static_cast<std::size_t>(budget),
                                      request.calls, request.pairs, request.graph_pairs);
    CheckedTimingPlan& plan = agreed.plan;
    const int timely = calls_drawn_in_time(plan.calls_per_block, plan.groups() + 1, seconds_per_set,
                                           request.threads, request.draw_seconds);
    if (timely < plan.calls_per_block) {
        char why[200];
        std::snprintf(
            why, sizeof why, "lowered to %d so that its %d sets draw in about %.0f s (%.2f s a set)", timely,
            (plan.groups() + 1) * timely,
            seconds_per_set * (plan.groups() + 1) * timely / std::max(request.threads, 1), seconds_per_set);
        set_calls(plan, timely, input_bytes, output_bytes, why);
    }
    // Every rank must make the same number of calls: their calls may be collectives.
    if (const int calls = min_over_ranks(judges, plan.calls_per_block); calls != plan.calls_per_block) {
        // never more than a rank could hold, whatever L2 asks
        set_calls(plan, calls, input_bytes, output_bytes,
                  std::to_string(calls) + " on every rank (the fewest any rank could hold)");
    }
    const int sets = (agreed.plan.groups() + 1) * agreed.plan.calls_per_block;
    agreed.draws = one_shape_draws(problem.info().stem, sets, [&](int first, int count) {
        return all_ranks(judges,
                         draws_of_base_shape(problem, base, rank, agreed.seed, agreed.mode, first, count));
    });
    if (const int skipped = agreed.draws.back() + 1 - sets; skipped > 0) {
        agreed.info +=
            std::string(agreed.info.empty() ? "" : "; ") +
            "this problem's shapes change with the trial: the timed calls read the draws of the eval's "
            "first trial's shapes on every rank (" +
            std::to_string(skipped) + " of the first " + std::to_string(agreed.draws.back() + 1) +
            " draws skipped)";
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
        set_bytes_ += aligned_bytes(spec_bytes(spec));
    }
    if (static_cast<int>(agreement.draws.size()) != sets_) {
        throw Error("problem " + problem.info().stem + ": " + std::to_string(agreement.draws.size()) +
                    " timed draws agreed for " + std::to_string(sets_) + " sets");
    }
    for (const int draw : agreement.draws) {
        configs_.push_back(timing_config(base, agreement.seed, agreement.mode, draw));
    }
    tie_rows_.resize(static_cast<std::size_t>(sets_));
    // Not zeroed here: each drawing thread clears its own set before writing it (the padding between its
    // tensors stays zero), so the gigabytes' first touch is spread over the threads instead of holding up
    // the drawing (problem 21 at PKB's size: 550 sets of 6 MB; zeroing 3.3 GB took 11 s on a loaded 2-core
    // host, all before the first draw).
    drawn_ = std::make_unique_for_overwrite<std::byte[]>(drawn_bytes());
    drawing_ = std::thread([this, &problem, rank, threads] {
        const auto start = std::chrono::steady_clock::now();
        draw(problem, rank, threads);
        draw_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
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
                        throw Error("set " + std::to_string(index) + " drew " +
                                    std::to_string(tensors.size()) + " inputs for " +
                                    std::to_string(specs_.size()) + " slots");
                    }
                    // The draws were chosen for their specs' shapes: a tensor of another is the problem's
                    // generator disagreeing with its own specs.
                    for (std::size_t t = 0; t < tensors.size(); ++t) {
                        if (tensors[t].shape() != specs_[t].shape || tensors[t].dtype() != specs_[t].dtype) {
                            throw Error("set " + std::to_string(index) + " drew input " + std::to_string(t) +
                                        " (" + specs_[t].name +
                                        ") of another shape or dtype than its slot's");
                        }
                    }
                    tie_rows_[index] = problem.checked_tie_rows(configs_[index], rank, tensors);
                    std::byte* set = drawn_.get() + set_bytes_ * index;
                    std::memset(set, 0, set_bytes_);
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
        const auto start = std::chrono::steady_clock::now();
        drawing_.join();
        wait_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (!failure_.empty()) {
        throw Error("drawing timed inputs: " + failure_);
    }
    if (staging_ != nullptr) {
        return;
    }
    device_ = &device;
    staging_ = device_->allocate(std::max<std::size_t>(drawn_bytes(), 1));
    if (drawn_bytes() > 0) {
        device_->upload(staging_, drawn_.get(), drawn_bytes());
    }
    device_->synchronize();
    drawn_.reset();
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
    device_->copy_async(
        destination, static_cast<const std::byte*>(staging_) + set_bytes_ * static_cast<std::size_t>(first),
        set_bytes_ * static_cast<std::size_t>(count));
}

} // namespace pkbw::engine
