#include "trial_buffers.h"

#include "pkbw/core/error.h"

#include <cstring>
#include <optional>

namespace pkbw::engine {
namespace {

TensorView make_view(const std::string& name, DType dtype, const Shape& shape, void* data) {
    if (shape.size() > static_cast<std::size_t>(kMaxDims)) {
        throw Error("tensor '" + name + "' has " + std::to_string(shape.size()) +
                    " dimensions; the ABI allows " + std::to_string(kMaxDims));
    }
    TensorView view{};
    view.name = name.c_str();
    view.dtype = dtype;
    view.ndim = static_cast<std::int32_t>(shape.size());
    const auto strides = contiguous_strides(shape);
    for (std::size_t i = 0; i < shape.size(); ++i) {
        view.shape[i] = shape[i];
        view.strides[i] = strides[i];
    }
    view.data = data;
    return view;
}

std::int64_t leading_dimension(const Shape& shape) {
    return shape.empty() ? 1 : shape[0];
}

} // namespace

std::string GuardViolation::describe() const {
    return "wrote " + std::to_string(count) + " byte(s) " + (before ? "before the start" : "past the end") +
           " of output '" + output + "' (first at " + (before ? "-" : "+") + std::to_string(offset) + ")";
}

TrialBuffers::TrialBuffers(SharedBuffers& shared, const std::vector<TensorSpec>& input_specs,
                           std::vector<Tensor> host_inputs, const std::vector<TensorSpec>& output_specs)
    : shared_(shared)
    , device_(shared.device())
    , host_inputs_(std::move(host_inputs))
    , output_specs_(output_specs) {
    // Names first: views keep pointers into this vector, which must not reallocate afterwards.
    names_.reserve(input_specs.size() + output_specs.size());
    for (const auto& spec : input_specs) {
        names_.push_back(spec.name);
    }
    for (const auto& spec : output_specs) {
        names_.push_back(spec.name);
    }
    for (std::size_t i = 0; i < input_specs.size(); ++i) {
        void* memory = shared_.allocate(spec_bytes(input_specs[i]));
        input_memory_.push_back(memory);
        input_views_.push_back(make_view(names_[i], input_specs[i].dtype, input_specs[i].shape, memory));
    }
    for (std::size_t i = 0; i < output_specs.size(); ++i) {
        const std::size_t bytes = spec_bytes(output_specs[i]);
        auto* memory = static_cast<std::byte*>(shared_.allocate(bytes + 2 * kGuardBytes));
        output_memory_.push_back(memory);
        output_views_.push_back(make_view(names_[input_specs.size() + i], output_specs[i].dtype,
                                          output_specs[i].shape, memory + kGuardBytes));
    }
    for (const auto& spec : output_specs) {
        if (spec.variable_length && lengths_memory_ == nullptr) {
            lengths_memory_ = shared_.allocate(output_specs.size() * sizeof(std::int64_t));
        }
    }
}

TrialBuffers::~TrialBuffers() {
    for (void* p : input_memory_) {
        shared_.release(p);
    }
    for (void* p : output_memory_) {
        shared_.release(p);
    }
    if (lengths_memory_ != nullptr) {
        shared_.release(lengths_memory_);
    }
}

void TrialBuffers::prepare() {
    for (std::size_t i = 0; i < host_inputs_.size(); ++i) {
        if (host_inputs_[i].nbytes() > 0) {
            device_.upload(input_memory_[i], host_inputs_[i].data(), host_inputs_[i].nbytes());
        }
    }
    for (std::size_t i = 0; i < output_specs_.size(); ++i) {
        auto* memory = static_cast<std::byte*>(output_memory_[i]);
        const std::size_t bytes = spec_bytes(output_specs_[i]);
        device_.fill(memory, kGuardByte, kGuardBytes);
        device_.fill(memory + kGuardBytes, kPoisonByte, bytes);
        device_.fill(memory + kGuardBytes + bytes, kGuardByte, kGuardBytes);
    }
    if (lengths_memory_ != nullptr) {
        // A variable output starts as "not reported"; a fixed one's slot holds its full length.
        std::vector<std::int64_t> lengths;
        for (const auto& spec : output_specs_) {
            lengths.push_back(spec.variable_length ? kLengthNotReported : leading_dimension(spec.shape));
        }
        device_.upload(lengths_memory_, lengths.data(), lengths.size() * sizeof(std::int64_t));
    }
    device_.synchronize();
}

std::vector<std::int64_t> TrialBuffers::reported_lengths() {
    std::vector<std::int64_t> lengths(output_specs_.size(), 0);
    if (lengths_memory_ != nullptr) {
        device_.download(lengths.data(), lengths_memory_, lengths.size() * sizeof(std::int64_t));
    }
    return lengths;
}

OutputSet TrialBuffers::download_outputs() {
    OutputSet outputs;
    const std::vector<std::int64_t> lengths = reported_lengths();
    for (std::size_t i = 0; i < output_specs_.size(); ++i) {
        const TensorSpec& spec = output_specs_[i];
        // Only a variable output's valid prefix is read: rows past its reported length are never looked at.
        std::optional<OutputLength> length;
        Shape shape = spec.shape;
        if (spec.variable_length) {
            length = OutputLength{leading_dimension(spec.shape), lengths[i]};
            shape[0] = length->valid() ? length->reported : 0;
        }
        Tensor tensor = Tensor::zeros(spec.dtype, shape);
        if (tensor.nbytes() > 0) {
            device_.download(tensor.mutable_data(), output_views_[i].data, tensor.nbytes());
        }
        if (length) {
            outputs.add(spec.name, std::move(tensor), *length);
        } else {
            outputs.add(spec.name, std::move(tensor));
        }
    }
    return outputs;
}

std::vector<GuardViolation> TrialBuffers::check_guards() {
    std::vector<GuardViolation> violations;
    std::vector<std::uint8_t> guard(kGuardBytes);
    for (std::size_t i = 0; i < output_specs_.size(); ++i) {
        auto* memory = static_cast<std::byte*>(output_memory_[i]);
        const std::size_t bytes = spec_bytes(output_specs_[i]);
        for (bool before : {true, false}) {
            device_.download(guard.data(), before ? memory : memory + kGuardBytes + bytes, kGuardBytes);
            GuardViolation violation{output_specs_[i].name, before, 0, 0};
            for (std::size_t b = 0; b < kGuardBytes; ++b) {
                // Before the output, the byte nearest to it is the last one of the guard.
                const std::size_t index = before ? kGuardBytes - 1 - b : b;
                if (guard[index] != kGuardByte) {
                    if (violation.count++ == 0) {
                        violation.offset = before ? b + 1 : b;
                    }
                }
            }
            if (violation.count > 0) {
                violations.push_back(violation);
            }
        }
    }
    return violations;
}

std::vector<std::string> TrialBuffers::changed_inputs() {
    std::vector<std::string> changed;
    std::vector<std::byte> now;
    for (std::size_t i = 0; i < host_inputs_.size(); ++i) {
        const std::size_t bytes = host_inputs_[i].nbytes();
        now.resize(bytes);
        if (bytes > 0) {
            device_.download(now.data(), input_memory_[i], bytes);
        }
        std::size_t differing = 0;
        const auto* pristine = host_inputs_[i].data();
        for (std::size_t b = 0; b < bytes; ++b) {
            differing += now[b] != pristine[b];
        }
        if (differing > 0) {
            changed.push_back(std::string(input_views_[i].name) + " (" + std::to_string(differing) +
                              " bytes changed)");
        }
    }
    return changed;
}

} // namespace pkbw::engine
