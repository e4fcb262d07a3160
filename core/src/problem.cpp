#include "pkbw/core/problem.h"

#include "pkbw/core/error.h"

namespace pkbw {

std::string_view input_mode_name(InputMode mode) {
    return mode == InputMode::Pkb ? "pkb" : "exact";
}

std::optional<InputMode> parse_input_mode(std::string_view text) {
    if (text == "pkb") {
        return InputMode::Pkb;
    }
    if (text == "exact") {
        return InputMode::Exact;
    }
    return std::nullopt;
}

std::string_view collective_kind_name(CollectiveKind kind) {
    switch (kind) {
    case CollectiveKind::None:
        return "none";
    case CollectiveKind::AllReduce:
        return "allreduce";
    case CollectiveKind::AllGather:
        return "allgather";
    case CollectiveKind::ReduceScatter:
        return "reducescatter";
    case CollectiveKind::Broadcast:
        return "broadcast";
    case CollectiveKind::Reduce:
        return "reduce";
    case CollectiveKind::AllToAll:
        return "alltoall";
    case CollectiveKind::Gather:
        return "gather";
    case CollectiveKind::Scatter:
        return "scatter";
    }
    return "none";
}

std::optional<std::string> Problem::check_config(const ProblemConfig& config) const {
    if (config.world_size < 1) {
        return "world size must be at least 1";
    }
    return std::nullopt;
}

std::map<std::string, double> Problem::params(const ProblemConfig&) const {
    return {};
}

WorkModel Problem::work(const ProblemConfig&) const {
    return {};
}

std::vector<Tensor> Problem::build_inputs(const ProblemConfig& config, int rank) const {
    std::vector<Tensor> inputs;
    for (const auto& spec : input_specs(config, rank)) {
        inputs.push_back(Tensor::zeros(spec.dtype, spec.shape));
    }
    make_inputs(config, rank, inputs);
    return inputs;
}

} // namespace pkbw
