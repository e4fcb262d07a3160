// One trial of a rank's judge (RankRun, rank_run.h): inputs (kept with --keep-inputs, with the judge's tie
// rows), the candidate before the reference, the comparison, the verdict every rank learns, the output
// files.
#include "pkbw/core/candidate_protocol.h"
#include "pkbw/core/compare.h"
#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/safetensors.h"
#include "pkbw/core/status.h"
#include "rank_run.h"

#include <algorithm>
#include <filesystem>
#include <new>
#include <unistd.h>

namespace pkbw::engine {
namespace {

using nlohmann::json;

// A DeviceError after a solution call leaves the CUDA context unusable: report and leave.
[[noreturn]] void exit_after_device_error(EventSink& events, int rank, int trial, const std::string& phase,
                                          const DeviceError& error) {
    events.send({{"event", protocol::kError},
                 {"rank", rank},
                 {"trial", trial},
                 {"phase", phase},
                 {"kind", error.kind()},
                 {"message", error.what()}});
    ::_exit(kRankExitSolutionBroke);
}

// Input names in call order, comma-separated (safetensors readers may list tensors sorted by name).
std::string input_order(const std::vector<TensorSpec>& specs) {
    std::string order;
    for (const auto& spec : specs) {
        order += (order.empty() ? "" : ",") + spec.name;
    }
    return order;
}

// The tie rows of a rank's inputs file ("pkbw.tie_rows", docs/formats.md): {output: {rows, rule}}.
json tie_rows_json(const TieRowsByOutput& tie_rows) {
    json j = json::object();
    for (const auto& [name, ties] : tie_rows)
        j[name] = {{"rows", ties.rows}, {"rule", ties.rule}};
    return j;
}

} // namespace

namespace detail {

SideResult RankRun::run_reference(TrialBuffers& buffers, int trial) {
    buffers.prepare();
    phase(status::kPhaseReference, trial);
    SideResult result;
    const Context context = reference_session_->make_context(
        local_rank_, buffers.input_views(), buffers.output_views(), buffers.output_lengths());
    int status = 0;
    try {
        status = reference_->call(context);
        device_->synchronize();
    } catch (const DeviceError& error) {
        exit_after_device_error(events_, rank_, trial, "reference", error);
    } catch (const std::bad_alloc&) {
        status = 1;
        result.error = out_of_memory_message();
    } catch (const std::exception& error) {
        status = 1;
        result.error = error.what();
    }
    if (status != 0 && result.error.empty()) {
        result.error = reference_session_->take_failure();
        if (result.error.empty()) {
            result.error = "reference returned " + std::to_string(status);
        }
    }
    collect(result, buffers, trial, "reference");
    return result;
}

SideResult RankRun::run_candidate(TrialBuffers& buffers, int trial,
                                  const std::map<std::string, double>& params) {
    buffers.prepare();
    phase(status::kPhaseCandidate, trial);
    SideResult result;
    try {
        candidate_->call(buffers.input_views(), buffers.output_views(), params, buffers.output_lengths());
    } catch (const CandidateFailure& failure) {
        if (failure.kind != candidate_protocol::kFailSolution) {
            candidate_broke(failure, status::kPhaseCandidate, trial);
        }
        result.error = failure.what();
    }
    collect(result, buffers, trial, "candidate");
    return result;
}

void RankRun::collect(SideResult& result, TrialBuffers& buffers, int trial, const std::string& side) {
    try {
        result.outputs = buffers.download_outputs();
        // The descriptor's fixed non-tensor leaves (None, torch.Size, ...): the same on both sides,
        // written with the tensors so that the output files and the cross-check see them.
        result.outputs.values = problem_->checked_output_values(config_.problem_config(trial), rank_);
        result.guard_violations = buffers.check_guards();
        if (side == "candidate" && !problem_->info().mutates_inputs) {
            result.changed_inputs = buffers.changed_inputs();
        }
    } catch (const DeviceError& error) {
        exit_after_device_error(events_, rank_, trial, side, error);
    }
}

void TrialVerdict::note(std::string_view new_status, const std::string& text) {
    // Keep the most severe status; messages accumulate.
    static const std::vector<std::string> order = {std::string(status::kPass), std::string(status::kMismatch),
                                                   std::string(status::kInvalidOutput),
                                                   std::string(status::kError)};
    const auto rank_of = [&](std::string_view s) {
        return std::find(order.begin(), order.end(), s) - order.begin();
    };
    if (rank_of(new_status) > rank_of(status)) {
        status = new_status;
    }
    message += (message.empty() ? "" : "; ") + text;
}

bool RankRun::run_trial(int trial) {
    phase(status::kPhaseInputs, trial);
    const ProblemConfig problem_config = config_.problem_config(trial);
    if (const auto why = problem_->check_config(problem_config)) {
        throw Error(config_.problem + ": " + *why);
    }
    const auto input_specs = problem_->input_specs(problem_config, rank_);
    const auto output_specs = problem_->output_specs(problem_config, rank_);
    std::vector<Tensor> host_inputs = problem_->build_inputs(problem_config, rank_);
    // The judge names the tie rows from the host inputs, before the candidate sees them (issue 16).
    const TieRowsByOutput tie_rows = problem_->checked_tie_rows(problem_config, rank_, host_inputs);
    if (config_.keep_inputs) {
        keep_trial_inputs(trial, input_specs, host_inputs, tie_rows);
    }
    TrialBuffers buffers(*shared_, input_specs, std::move(host_inputs), output_specs);
    const auto params = problem_->params(problem_config);
    reference_session_->set_params(params);

    // The candidate runs before the reference: when it runs, no result of this trial exists
    // anywhere in the process (the reference shares the address space, and on the host backend
    // its downloaded outputs would be plain heap memory a candidate could search for and copy).
    std::optional<SideResult> reference, candidate;
    if (candidate_) {
        candidate = run_candidate(buffers, trial, params);
    }
    if (reference_) {
        reference = run_reference(buffers, trial);
    }
    const TrialVerdict verdict = judge_trial(reference, candidate, trial, tie_rows);

    // Every rank learns every verdict: the trial stops (or outputs are kept) for all alike.
    const std::uint8_t mine = verdict.status == status::kPass ? 0 : 1;
    const auto verdicts = rendezvous_->all_gather(std::as_bytes(std::span(&mine, 1)));
    bool everyone_passed = true;
    for (const auto& v : verdicts) {
        everyone_passed = everyone_passed && !v.empty() && v[0] == std::byte{0};
    }
    json outputs = json::object();
    if (config_.keep_outputs || !everyone_passed) {
        outputs = keep_trial_outputs(trial, reference, candidate);
    }
    events_.send({{"event", protocol::kRankResult},
                  {"rank", rank_},
                  {"trial", trial},
                  {"status", verdict.status},
                  {"message", verdict.message},
                  {"tensors", verdict.tensors},
                  {"guard_violations", verdict.violations},
                  {"mutated_inputs", verdict.changed},
                  {"outputs", outputs}});
    return everyone_passed;
}

void RankRun::keep_trial_inputs(int trial, const std::vector<TensorSpec>& input_specs,
                                const std::vector<Tensor>& host_inputs, const TieRowsByOutput& tie_rows) {
    const ProblemConfig problem_config = config_.problem_config(trial);
    OutputSet inputs;
    for (std::size_t i = 0; i < input_specs.size(); ++i) {
        inputs.add(input_specs[i].name, host_inputs[i]);
    }
    std::map<std::string, std::string> metadata{
        {"pkbw.problem", config_.problem},
        {"pkbw.trial", std::to_string(trial)},
        {"pkbw.input_order", input_order(input_specs)},
        {"pkbw.params", json(problem_->params(problem_config)).dump()}};
    if (!tie_rows.empty())
        metadata["pkbw.tie_rows"] = tie_rows_json(tie_rows).dump();
    write_safetensors(
        (trial_directory(trial) / run_layout::fill(run_layout::kTrialInputs, rank_, trial)).string(), inputs,
        metadata);
}

TrialVerdict RankRun::judge_trial(const std::optional<SideResult>& reference,
                                  const std::optional<SideResult>& candidate, int trial,
                                  const TieRowsByOutput& tie_rows) {
    TrialVerdict verdict;
    for (const auto* side : {&reference, &candidate}) {
        if (!*side) {
            continue;
        }
        const std::string name = side == &reference ? "reference" : "candidate";
        if (!(*side)->error.empty()) {
            verdict.note(status::kError, name + " failed: " + (*side)->error);
        }
        for (const auto& v : (*side)->guard_violations) {
            verdict.note(status::kInvalidOutput, name + " " + v.describe());
            verdict.violations.push_back(name + ": " + v.describe());
        }
        for (const auto& c : (*side)->changed_inputs) {
            verdict.note(status::kInvalidOutput, name + " modified input " + c);
            verdict.changed.push_back(c);
        }
    }
    if (reference && candidate) {
        phase(status::kPhaseCompare, trial);
        const CompareOptions options{config_.atol, config_.rtol, 256};
        const OutputComparison comparison =
            compare_outputs(reference->outputs, candidate->outputs, options, tie_rows);
        for (const auto& tensor : comparison.tensors) {
            verdict.tensors.push_back(protocol::to_json(tensor));
        }
        if (!comparison.pass) {
            verdict.note(status::kMismatch, comparison.first_error);
        }
    }
    return verdict;
}

json RankRun::keep_trial_outputs(int trial, const std::optional<SideResult>& reference,
                                 const std::optional<SideResult>& candidate) {
    json outputs = json::object();
    const auto dir = trial_directory(trial);
    for (const auto* side : {&reference, &candidate}) {
        if (!*side) {
            continue;
        }
        const std::string name = side == &reference ? "reference" : "candidate";
        const auto path = dir / run_layout::fill(run_layout::kTrialOutputs, rank_, trial, name);
        // A variable-length output is written as its valid prefix, its length beside it (core).
        write_safetensors(path.string(), (*side)->outputs,
                          {{"pkbw.problem", config_.problem},
                           {"pkbw.side", name},
                           {"pkbw.rank", std::to_string(rank_)},
                           {"pkbw.trial", std::to_string(trial)}});
        outputs[name] = path.string();
    }
    return outputs;
}

} // namespace detail
} // namespace pkbw::engine
