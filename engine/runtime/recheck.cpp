#include "recheck.h"

#include "pkbw/core/candidate_protocol.h"
#include "pkbw/core/compare.h"
#include "pkbw/core/dtype.h"
#include "pkbw/core/status.h"

namespace pkbw::engine {

std::vector<RecheckResult> recheck_after_timing(const RecheckContext& c, TimingBuffers& timed) {
    std::vector<RecheckResult> results;
    const std::pair<const char*, int> variants[] = {
        {"timed_addresses", 1}, {"one_element_changed", 0}, {"new_addresses", 2}};
    for (const auto& [variant, offset] : variants) {
        const bool same_addresses = std::string(variant) != "new_addresses";
        const ProblemConfig problem_config =
            c.config.problem_config(offset == 0 ? 0 : c.config.trials + offset);
        const auto input_specs = c.problem.input_specs(problem_config, c.rank);
        const auto output_specs = c.problem.output_specs(problem_config, c.rank);
        const auto params = c.problem.params(problem_config);
        std::vector<Tensor> inputs = c.problem.build_inputs(problem_config, c.rank);
        if (offset == 0) {
            bool changed = false;
            for (auto& tensor : inputs) {
                if (!changed && is_floating(tensor.dtype()) && tensor.numel() > 0) {
                    const std::size_t size = dtype_size(tensor.dtype());
                    std::byte* last = tensor.mutable_data() + (tensor.numel() - 1) * size;
                    f64_to_element(tensor.dtype(), element_to_f64(tensor.dtype(), last) + 1.0, last);
                    changed = true;
                }
            }
            if (!changed) {
                continue; // no floating-point input to change
            }
        }
        OutputSet candidate_outputs;
        std::string error;
        try {
            if (same_addresses) {
                for (std::size_t i = 0; i < inputs.size(); ++i) {
                    if (inputs[i].nbytes() > 0) {
                        c.device.upload(timed.inputs(0)[i].data, inputs[i].data(), inputs[i].nbytes());
                    }
                }
                for (const auto& view : timed.outputs()) {
                    c.device.fill(view.data, kPoisonByte, view.nbytes());
                }
                c.device.synchronize();
                c.candidate.call(timed.inputs(0), timed.outputs(), params);
                for (std::size_t i = 0; i < output_specs.size(); ++i) {
                    Tensor tensor = Tensor::zeros(output_specs[i].dtype, output_specs[i].shape);
                    if (tensor.nbytes() > 0) {
                        c.device.download(tensor.mutable_data(), timed.outputs()[i].data, tensor.nbytes());
                    }
                    candidate_outputs.add(output_specs[i].name, std::move(tensor));
                }
            } else {
                TrialBuffers fresh(c.shared, input_specs, inputs, output_specs);
                fresh.prepare();
                c.candidate.call(fresh.input_views(), fresh.output_views(), params);
                candidate_outputs = fresh.download_outputs();
            }
        } catch (const CandidateFailure& failure) {
            if (failure.kind != candidate_protocol::kFailSolution) {
                throw; // the candidate process broke: its judge ends the rank
            }
            error = failure.what();
        }
        // The descriptor's fixed non-tensor leaves join the tensors, as in an eval's collect (the
        // reference's side gets them there): without them a problem with a None output never re-checks.
        candidate_outputs.values = c.problem.checked_output_values(problem_config, c.rank);
        const TieRowsByOutput tie_rows = c.problem.checked_tie_rows(problem_config, c.rank, inputs);
        TrialBuffers reference_buffers(c.shared, input_specs, std::move(inputs), output_specs);
        const auto [reference_outputs, reference_error] = c.reference(reference_buffers, params);
        std::string status(status::kPass);
        std::string message;
        if (!error.empty()) {
            status = status::kError;
            message = "candidate failed: " + error;
        } else if (!reference_error.empty()) {
            status = status::kError;
            message = "reference failed: " + reference_error;
        } else {
            const CompareOptions options{c.config.atol, c.config.rtol, 256};
            const OutputComparison comparison =
                compare_outputs(reference_outputs, candidate_outputs, options, tie_rows);
            if (!comparison.pass) {
                status = status::kMismatch;
                message = comparison.first_error;
            }
        }
        results.push_back({variant, status, message});
    }
    return results;
}

} // namespace pkbw::engine
