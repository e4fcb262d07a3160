#include "timed_lengths.h"

#include "pkbw/core/compare.h"

namespace pkbw::engine {
namespace {

std::int64_t leading(const TensorSpec& spec) {
    return spec.shape.empty() ? 1 : spec.shape[0];
}

} // namespace

TimedLengths::TimedLengths(SharedBuffers& shared, std::vector<TensorSpec> specs, int calls)
    : specs_(std::move(specs))
    , calls_(calls)
    , slots_(shared, specs_.size() * static_cast<std::size_t>(calls) * sizeof(std::int64_t)) {}

std::unique_ptr<TimedLengths> TimedLengths::make(SharedBuffers& shared, const std::vector<TensorSpec>& specs,
                                                 int calls) {
    for (const auto& spec : specs) {
        if (spec.variable_length) {
            return std::unique_ptr<TimedLengths>(new TimedLengths(shared, specs, calls));
        }
    }
    return nullptr;
}

std::int64_t* TimedLengths::slot(int call) const {
    return static_cast<std::int64_t*>(slots_.data()) + static_cast<std::size_t>(call) * specs_.size();
}

void TimedLengths::reset(Device& device) const {
    std::vector<std::int64_t> values;
    for (int k = 0; k < calls_; ++k) {
        for (const auto& spec : specs_) {
            values.push_back(spec.variable_length ? kLengthNotReported : leading(spec));
        }
    }
    device.upload(slots_.data(), values.data(), values.size() * sizeof(std::int64_t));
}

std::vector<std::int64_t> TimedLengths::read(Device& device) const {
    std::vector<std::int64_t> values(specs_.size() * static_cast<std::size_t>(calls_));
    device.download(values.data(), slots_.data(), values.size() * sizeof(std::int64_t));
    return values;
}

TimedLengthCheck TimedLengths::check(const TimedLengths* reference, const TimedLengths* candidate,
                                     Device& device, const std::vector<TensorSpec>& specs, int calls) {
    TimedLengthCheck out;
    out.messages.assign(static_cast<std::size_t>(calls), {});
    const std::vector<std::int64_t> ref = reference ? reference->read(device) : std::vector<std::int64_t>{};
    const std::vector<std::int64_t> cand = candidate ? candidate->read(device) : std::vector<std::int64_t>{};
    for (int k = 0; k < calls; ++k) {
        std::vector<std::int64_t> rows;
        for (std::size_t t = 0; t < specs.size(); ++t) {
            const std::size_t at = static_cast<std::size_t>(k) * specs.size() + t;
            if (!specs[t].variable_length || ref.empty() || cand.empty()) {
                rows.push_back(leading(specs[t]));
                continue;
            }
            // core's length rule, on the slots alone: the elements are compared only when it passes.
            const OutputLength r{leading(specs[t]), ref[at]}, c{leading(specs[t]), cand[at]};
            const bool agree = r.valid() && c.valid() && ref[at] == cand[at];
            if (!agree && out.messages[static_cast<std::size_t>(k)].empty()) {
                const Tensor none = Tensor::zeros(specs[t].dtype, Shape{0});
                out.messages[static_cast<std::size_t>(k)] =
                    compare_leaf(specs[t].name, none, &r, none, &c, CompareOptions{}).message;
            }
            rows.push_back(agree ? ref[at] : 0);
        }
        out.rows.push_back(std::move(rows));
    }
    return out;
}

} // namespace pkbw::engine
